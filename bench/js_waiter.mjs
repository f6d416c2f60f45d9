// The JavaScript client's side of bench/jsclient.py: for each line "<inbox id> <subject>" read
// on stdin, `waitForEmail` (one request) and print "<epoch ms>" when it resolves, or
// "error <message>". BURNBOX_URL and BURNBOX_API_KEY name the service.
import { createInterface } from "node:readline";

import { Burnbox } from "../clients/js/dist/index.js";

const burnbox = new Burnbox();
for await (const line of createInterface({ input: process.stdin })) {
  const [inbox, ...subject] = line.split(" ");
  try {
    await burnbox.waitForEmail(inbox, { subject: subject.join(" "), timeout: 30_000 });
    console.log(performance.timeOrigin + performance.now());
  } catch (error) {
    console.log(`error ${error}`);
  }
}
