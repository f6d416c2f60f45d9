// A small SMTP sender over node:net, for the tests: they mail Burnbox's SMTP server the way an
// application would, without a mail library. BURNBOX_SMTP names the server (host:port).
import net from "node:net";
import { randomUUID } from "node:crypto";

/** The SMTP server of BURNBOX_SMTP as [host, port]. */
export function smtpServer() {
  const [host, port] = (process.env.BURNBOX_SMTP ?? "127.0.0.1:2525").split(":");
  return [host, Number(port)];
}

/** A MIME message: a text body, an HTML alternative when `html` is given, a CSV file
 * `report.csv` when `attachment` (a string) is given, and an `X-Tags` header for `tags`. */
export function mime({ from = "app@shop.example", to, subject, text, html, attachment, tags }) {
  const head = [`From: ${from}`, `To: ${to}`, `Subject: ${subject}`,
    `Message-ID: <${randomUUID()}@shop.example>`, "MIME-Version: 1.0"];
  if (tags !== undefined) head.push(`X-Tags: ${tags}`);
  const part = (type, body) => `Content-Type: ${type}; charset=utf-8\r\n` +
    `Content-Transfer-Encoding: base64\r\n\r\n${Buffer.from(body).toString("base64")}`;
  let body = part("text/plain", text);
  if (html !== undefined) {
    body = `Content-Type: multipart/alternative; boundary=alt\r\n\r\n--alt\r\n${body}\r\n` +
      `--alt\r\n${part("text/html", html)}\r\n--alt--`;
  }
  if (attachment !== undefined) {
    body = `Content-Type: multipart/mixed; boundary=mix\r\n\r\n--mix\r\n${body}\r\n--mix\r\n` +
      `Content-Disposition: attachment; filename="report.csv"\r\n` +
      `${part("text/csv", attachment)}\r\n--mix--`;
  }
  return `${head.join("\r\n")}\r\n${body}\r\n`;
}

/** Send `message` (see `mime`) through SMTP; resolves with `performance.timeOrigin +
 * performance.now()` (milliseconds since the epoch) when the server answered 250 to the data. */
export function send(message) {
  const [host, port] = smtpServer();
  const data = mime(message).replace(/^\./gm, "..");
  const commands = ["EHLO shop.example", `MAIL FROM:<${message.from ?? "app@shop.example"}>`,
    `RCPT TO:<${message.to}>`, "DATA", `${data}\r\n.`, "QUIT"];
  return new Promise((resolve, reject) => {
    const socket = net.createConnection({ host, port });
    socket.setTimeout(10_000, () => socket.destroy(new Error("SMTP server silent for 10 s")));
    let buffer = "";
    let step = -1; // -1: the greeting
    let accepted;
    socket.on("data", (chunk) => {
      buffer += chunk.toString("utf8");
      let end;
      while ((end = buffer.indexOf("\r\n")) >= 0) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (line[3] === "-") continue; // more lines of the same reply follow
        if (!/^[23]/.test(line)) {
          socket.destroy(new Error(`SMTP ${commands[step] ?? "greeting"}: ${line}`));
          return;
        }
        if (commands[step] === `${data}\r\n.`) accepted = performance.timeOrigin + performance.now();
        step += 1;
        if (step < commands.length) socket.write(`${commands[step]}\r\n`);
      }
    });
    socket.on("error", reject);
    socket.on("close", () => (accepted === undefined
      ? reject(new Error("SMTP connection closed before the data was accepted"))
      : resolve(accepted)));
  });
}
