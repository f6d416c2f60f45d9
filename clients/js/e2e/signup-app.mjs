// The application under test of the Playwright suite and the README's example: a sign-up page
// that mails a one-time code and a confirmation link through Burnbox's SMTP server
// (BURNBOX_SMTP). `GET /` is the form; `POST /signup` mails the code and link and shows the
// code form; `POST /verify` answers "Verified" for the right code; `GET /confirm/<token>`
// answers "Confirmed" for a token it mailed (once), 404 otherwise.
//
// Run: node e2e/signup-app.mjs [port]; it prints its address (http://127.0.0.1:<port>) once
// it listens.
import { randomBytes, randomInt } from "node:crypto";
import http from "node:http";

import { send } from "../test/smtp.mjs";

const codes = new Map(); // address -> code
const tokens = new Set();

const page = (title, body) => `<!doctype html><html><head><title>${title}</title></head>` +
  `<body><h1>${title}</h1>${body}</body></html>`;
const escape = (text) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

async function form(request) {
  let body = "";
  for await (const chunk of request) body += chunk;
  return new URLSearchParams(body);
}

const server = http.createServer(async (request, response) => {
  const reply = (status, html) => {
    response.writeHead(status, { "Content-Type": "text/html; charset=utf-8" });
    response.end(html);
  };
  try {
    if (request.method === "GET" && request.url === "/") {
      return reply(200, page("Sign up", '<form method="post" action="/signup">' +
        '<label>E-mail <input name="email" type="email" required></label>' +
        "<button>Sign up</button></form>"));
    }
    if (request.method === "POST" && request.url === "/signup") {
      const address = (await form(request)).get("email") ?? "";
      const code = String(randomInt(100000, 1000000));
      const token = randomBytes(16).toString("hex");
      codes.set(address, code);
      tokens.add(token);
      const link = `http://${request.headers.host}/confirm/${token}`;
      await send({ to: address, subject: "Confirm your account",
        text: `Welcome! Your verification code is ${code}.\n\nOr confirm your address: ${link}`,
        html: `<p>Welcome! Your verification code is <b>${code}</b>.</p>` +
          `<p><a href="${link}">Confirm your address</a></p>` });
      return reply(200, page("Check your inbox", '<form method="post" action="/verify">' +
        `<input type="hidden" name="email" value="${escape(address)}">` +
        '<label>Code <input name="code" inputmode="numeric"></label>' +
        "<button>Verify</button></form>"));
    }
    if (request.method === "POST" && request.url === "/verify") {
      const sent = await form(request);
      const right = codes.get(sent.get("email") ?? "") === sent.get("code");
      return reply(right ? 200 : 400, page(right ? "Verified" : "Wrong code", ""));
    }
    const token = request.url?.match(/^\/confirm\/(\w+)$/)?.[1];
    if (request.method === "GET" && token && tokens.delete(token)) {
      return reply(200, page("Confirmed", ""));
    }
    return reply(404, page("Not found", ""));
  } catch (error) {
    return reply(500, page("Error", escape(String(error))));
  }
});

server.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => {
  console.log(`http://127.0.0.1:${server.address().port}`);
});
