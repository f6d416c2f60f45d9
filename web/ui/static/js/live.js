// Following a WebSocket stream (docs/events.md): a fresh single-use ticket per connection,
// reconnection with backoff, resumed after the last numbered message received (`since`), and
// the text ping browsers must use (they cannot send protocol pings; the server closes a client
// that stays silent).

import { openStream } from "./api.js";

const PING_MS = 20000;
const MAX_DELAY_MS = 30000;

/** Call `onMessage(message)` for each message of the stream at `path` until the returned
 * function is called. A numbered stream (an inbox's, the notifications) is resumed after the
 * last message received when the socket reconnects (a web process restarted, the network
 * dropped), so nothing published meanwhile is missed; a `replay.incomplete` message then says
 * that some of it is no longer kept, and the view should read its page again. `onOpen()`
 * runs each time a socket is open (the server listens from then on). `since`, when given, is
 * where the first socket starts (a place the API gave with the page's data), so what was
 * published between that answer and the socket is sent first. A ticket refused 429 (after
 * the API client's own waits) is asked again once its window ends, not on the backoff's
 * schedule. */
export function follow(path, onMessage, onOpen = () => {}, { since = null } = {}) {
  let last = since;
  let socket = null;
  let stopped = false;
  let delay = 1000;
  let pinger = null;

  async function connect() {
    try {
      socket = await openStream(path, last);
    } catch (error) {
      return retry(error.retryAfter ? error.retryAfter * 1000 : null);
    }
    if (stopped) return socket.close();
    socket.addEventListener("open", () => { delay = 1000; onOpen(); });
    socket.addEventListener("message", (event) => {
      const message = JSON.parse(event.data);
      if (Number.isInteger(message.id)) last = message.id;
      onMessage(message);
    });
    socket.addEventListener("close", () => retry());
    pinger = setInterval(() => socket.readyState === WebSocket.OPEN && socket.send('{"type":"ping"}'), PING_MS);
  }

  function retry(after = null) {
    clearInterval(pinger);
    if (stopped) return;
    setTimeout(connect, after ?? delay);
    delay = Math.min(delay * 2, MAX_DELAY_MS);
  }

  connect();
  return () => {
    stopped = true;
    clearInterval(pinger);
    socket?.close();
  };
}
