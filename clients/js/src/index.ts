/**
 * Burnbox's JavaScript/TypeScript client: inboxes to create and delete, e-mails to wait for,
 * read and delete.
 *
 * Every call is one HTTP request with the team API key as a Bearer token, except where its
 * comment says otherwise. It needs only a global `fetch` (Node 18+, browsers). An error answer
 * of the API rejects with `BurnboxError` (status, code and message of the API's error
 * envelope); a wait that runs out of time rejects with `EmailNotReceived`.
 *
 *     import { Burnbox } from "burnbox-client";
 *     const burnbox = new Burnbox({ url: "http://127.0.0.1:8080", apiKey });
 *     const inbox = await burnbox.createInbox();
 *     const email = await burnbox.waitForEmail(inbox, { subject: "Confirm" });
 *     email.codes, email.links;
 */

export const API_PREFIX = "/api/v1";
/** A wait is answered by the server when its own timeout passes; the HTTP request is given this
 * much longer, so a slow network never turns a clean "nothing yet" into a client-side abort. */
export const WAIT_GRACE_MS = 15_000;
export const REQUEST_TIMEOUT_MS = 30_000;
export const DEFAULT_WAIT_MS = 30_000;
const PER_PAGE = 100;

/** Settings of a client; each falls back to an environment variable in Node. */
export interface BurnboxOptions {
  /** The service's base address (`https://burnbox.example`; a trailing `/api/v1` is accepted
   * too). Default: `BURNBOX_URL`, else `BURNBOX_API`. */
  url?: string;
  /** A team API key. Default: `BURNBOX_API_KEY`. */
  apiKey?: string;
  /** The domain new inboxes get. Default: `BURNBOX_DOMAIN`; without any, the key's team must
   * have exactly one usable domain, found on the first `createInbox`. */
  domain?: string;
  /** The fetch to use (the global one by default). */
  fetch?: typeof fetch;
}

/** A duration: milliseconds as a number, or a Go duration string such as `"30s"` or `"1h"`. */
export type Duration = number | string;

/** An inbox, or how to name one: its id, its full address, or an object with its id. */
export type InboxRef = string | { id: string };

export interface Inbox {
  id: string;
  /** The full address to send to (`signup-test@mail.example.com`). */
  address: string;
  /** The local part (`signup-test`). */
  alias: string;
  domainId: string;
  teamId: string;
  orgId: string;
  isActive: boolean;
  expiresAt: string;
  createdAt: string;
  emailCount: number;
  unreadCount: number;
}

export interface Link {
  href: string;
  /** The link's text in the HTML body; "" for a URL of the text body. */
  text: string;
}

export interface Attachment {
  id: string;
  emailId: string;
  filename: string;
  contentType: string;
  sizeBytes: number;
  contentId: string | null;
  inline: boolean;
  /** MD5, SHA-1 and SHA-256 of the bytes (hex); null in the moment before Burnbox's worker
   * computed them (`waitForChecks` waits for them). */
  checksums: Checksums | null;
}

export interface Checksums {
  md5: string;
  sha1: string;
  sha256: string;
}

/** A rule (SpamAssassin) or symbol (rspamd) that fired. */
export interface SpamEngineRule {
  name: string;
  /** Its points; null when the engine named it without them. */
  score: number | null;
  description: string;
}

/** What the operator's spam engine said of an e-mail (Burnbox's own heuristics stay in
 * `spamScore`). */
export interface SpamEngineVerdict {
  /** pending until the engine answers; skipped (too large, or no engine any more); error
   * (the engine could not be asked: see `reason`). */
  status: "pending" | "done" | "skipped" | "error";
  engine: "spamassassin" | "rspamd" | null;
  score: number | null;
  threshold: number | null;
  isSpam: boolean | null;
  /** rspamd's recommended action; "" for SpamAssassin. */
  action: string;
  /** Highest score first. */
  rules: SpamEngineRule[];
  checkedAt: string | null;
  reason: string;
}

/** The List-Unsubscribe (RFC 2369) and List-Unsubscribe-Post (RFC 8058) headers, checked. */
export interface ListUnsubscribe {
  header: string | null;
  post: string | null;
  links: { uri: string; scheme: string; valid: boolean }[];
  /** One-click is offered: an https URI and `List-Unsubscribe-Post: List-Unsubscribe=One-Click`. */
  oneClick: boolean;
  /** What a mail client would object to, in words. */
  problems: string[];
}

/** An e-mail as it shows in a list. */
export interface EmailSummary {
  id: string;
  inboxId: string;
  messageId: string;
  fromAddress: string;
  toAddress: string;
  subject: string;
  snippet: string;
  hasAttachments: boolean;
  isRead: boolean;
  sizeBytes: number;
  receivedAt: string;
  /** Its tags' names, in alphabetical order. */
  tags: string[];
}

/** An e-mail with its bodies (the HTML sanitised by Burnbox), headers, attachments, and the
 * one-time codes and links Burnbox found in it. */
export interface Email extends EmailSummary {
  cc: string[];
  text: string;
  html: string;
  headers: { name: string; value: string }[];
  spamScore: number;
  expiresAt: string;
  attachments: Attachment[];
  codes: string[];
  links: Link[];
  /** The operator's spam engine's verdict; null when none is configured. */
  spamEngine: SpamEngineVerdict | null;
  /** The unsubscribe headers checked; null when the e-mail has none. */
  listUnsubscribe: ListUnsubscribe | null;
}

/** Which plain page of an e-mail `viewUrl` names. */
export interface ViewOptions {
  /** The sanitised HTML (default) or the text. */
  part?: "html" | "text";
  /** Load the HTML's http(s) images (blocked by default, as tracking pixels are). */
  remoteImages?: boolean;
}

/** One release of an e-mail to real mailboxes, and how its delivery went. */
export interface Release {
  id: string;
  emailId: string;
  recipients: string[];
  /** `queued` (waiting for the relay or a next attempt), `sent` or `failed`. */
  state: "queued" | "sent" | "failed";
  attempts: number;
  /** The relay's last reply, or why there was none; empty before the first attempt. */
  relayReply: string;
  /** The auto-release rule that made it; null when a person asked (or the rule is gone). */
  ruleId: string | null;
  createdAt: string;
  finishedAt: string | null;
}

/** An auto-release rule of an inbox: its new mail matching `query` is released to
 * `recipients` by itself, once per e-mail. */
export interface ReleaseRule {
  id: string;
  /** A search expression (the e-mail list's syntax: `subject:invoice tag:billing`). */
  query: string;
  recipients: string[];
  createdAt: string;
  updatedAt: string;
}

export interface CreateInboxOptions {
  /** The local part; random when absent. */
  alias?: string;
  /** The inbox's lifetime; the team's default when absent. */
  ttl?: Duration;
  /** The domain; the client's domain (or the key's one usable domain) when absent. */
  domain?: string;
}

/** What an awaited e-mail must match: every filter given. */
export interface WaitOptions {
  /** Part of the subject (case-blind). */
  subject?: string;
  /** Part of the From address (case-blind). */
  from?: string;
  /** A search in Burnbox's search syntax (`code:482913`, `from:shop.example`, phrases...). */
  q?: string;
  /** A tag the e-mail carries (case-blind). */
  tag?: string;
  /** Only e-mails received after this one: an e-mail id of the inbox, or an ISO 8601 time. */
  after?: string;
  /** How long to wait: milliseconds or a Go duration; 30 s by default. */
  timeout?: Duration;
}

/** An attachment of a message put in with `putMessage`. */
export interface MessageAttachment {
  filename: string;
  /** The bytes (a string is sent as its UTF-8 bytes). */
  content: Uint8Array | string;
  /** type/subtype; guessed from the filename by Burnbox when absent. */
  contentType?: string;
  /** Shows the part in the HTML body as `cid:<contentId>`. */
  contentId?: string;
  /** Shown in place rather than offered as a file (default: true with a contentId). */
  inline?: boolean;
}

/** A message to put into an inbox over HTTP (`putMessage`). */
export interface PutMessage {
  /** An address, or `Name <address>`. */
  from: string;
  /** The To header; the inbox's own address when absent. */
  to?: string[];
  cc?: string[];
  subject?: string;
  text?: string;
  html?: string;
  attachments?: MessageAttachment[];
  /** Extra headers by name (Reply-To, Message-ID, List-Unsubscribe...). */
  headers?: Record<string, string>;
  /** Written as the message's `X-Tags` header. */
  tags?: string[];
}

function base64(content: Uint8Array | string): string {
  const bytes = typeof content === "string" ? new TextEncoder().encode(content) : content;
  let binary = "";
  for (let start = 0; start < bytes.length; start += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(start, start + 0x8000));
  }
  return btoa(binary);
}

/** An error answer of the Burnbox API (4xx or 5xx), with its envelope's fields. */
export class BurnboxError extends Error {
  override name = "BurnboxError";

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(`${status} ${code}: ${message}`);
  }
}

/** No matching e-mail arrived within the wait's timeout. Names the inbox's address, the filter
 * and the timeout; `received` holds the matching e-mails that did arrive (fewer than asked). */
export class EmailNotReceived extends Error {
  override name = "EmailNotReceived";

  constructor(
    message: string,
    readonly inbox: string,
    readonly received: Email[],
  ) {
    super(message);
  }
}

/** `duration` as the Go duration the API reads: a number is milliseconds. */
export function goDuration(duration: Duration): string {
  return typeof duration === "number" ? `${Math.round(duration)}ms` : duration;
}

/** A Go duration in milliseconds, for the HTTP deadline of a wait (`"1m30s"`, `"250ms"`). An
 * unreadable one counts as the server's longest wait: the server refuses it with a 400. */
function milliseconds(duration: Duration): number {
  if (typeof duration === "number") return duration;
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 1e-3,
    "µs": 1e-3, ns: 1e-6 };
  let total = 0;
  const parts = duration.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/g);
  for (const [, amount, unit] of parts) total += Number(amount) * units[unit];
  return total > 0 ? total : 300_000;
}

/** `timeout` in words for a message: "30 s", "250 ms", or the Go duration given. */
function inWords(timeout: Duration): string {
  if (typeof timeout === "string") return timeout;
  return timeout % 1000 === 0 ? `${timeout / 1000} s` : `${timeout} ms`;
}

function environment(name: string): string | undefined {
  // Node's environment when there is one; browsers have none.
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } })
    .process?.env;
  return env?.[name] || undefined;
}

type Json = Record<string, any>;

function toInbox(data: Json): Inbox {
  return {
    id: data.id, address: data.full_address, alias: data.address, domainId: data.domain_id,
    teamId: data.team_id, orgId: data.org_id, isActive: data.is_active,
    expiresAt: data.expires_at, createdAt: data.created_at, emailCount: data.email_count,
    unreadCount: data.unread_count,
  };
}

function toSummary(data: Json): EmailSummary {
  return {
    id: data.id, inboxId: data.inbox_id, messageId: data.message_id,
    fromAddress: data.from_address, toAddress: data.to_address, subject: data.subject,
    snippet: data.snippet, hasAttachments: data.has_attachments, isRead: data.is_read,
    sizeBytes: data.size_bytes, receivedAt: data.received_at, tags: data.tags ?? [],
  };
}

function toEmail(data: Json): Email {
  return {
    ...toSummary(data), cc: data.cc, text: data.body_text, html: data.body_html,
    headers: data.headers, spamScore: data.spam_score, expiresAt: data.expires_at,
    codes: data.codes, links: data.links.map((link: Json) => ({ href: link.href, text: link.text })),
    attachments: data.attachments.map((item: Json) => ({
      id: item.id, emailId: item.email_id, filename: item.filename,
      contentType: item.content_type, sizeBytes: item.size_bytes, contentId: item.content_id,
      inline: item.inline, checksums: item.checksums ?? null,
    })),
    spamEngine: data.spam_engine ? toVerdict(data.spam_engine) : null,
    listUnsubscribe: data.list_unsubscribe ? {
      header: data.list_unsubscribe.header, post: data.list_unsubscribe.post,
      links: data.list_unsubscribe.links, oneClick: data.list_unsubscribe.one_click,
      problems: data.list_unsubscribe.problems,
    } : null,
  };
}

function toVerdict(data: Json): SpamEngineVerdict {
  return {
    status: data.status, engine: data.engine, score: data.score, threshold: data.threshold,
    isSpam: data.is_spam, action: data.action, rules: data.rules, checkedAt: data.checked_at,
    reason: data.reason,
  };
}

/** Whether Burnbox's worker still owes the e-mail a check (the spam engine's verdict or an
 * attachment's checksums). */
function checksPending(email: Email): boolean {
  return email.spamEngine?.status === "pending"
    || email.attachments.some((attachment) => attachment.checksums === null);
}

function toRelease(data: Json): Release {
  return {
    id: data.id, emailId: data.email_id, recipients: data.recipients, state: data.state,
    attempts: data.attempts, relayReply: data.relay_reply, ruleId: data.rule_id,
    createdAt: data.created_at, finishedAt: data.finished_at,
  };
}

function toReleaseRule(data: Json): ReleaseRule {
  return {
    id: data.id, query: data.query, recipients: data.recipients, createdAt: data.created_at,
    updatedAt: data.updated_at,
  };
}

interface RequestOptions {
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  timeoutMs?: number;
}

/** A client of one Burnbox service, acting with one team API key. */
export class Burnbox {
  /** The API's base address, ending in `/api/v1`. */
  readonly api: string;
  readonly domain: string | undefined;
  private readonly apiKey: string;
  private readonly fetch: typeof fetch;
  private assignmentId: string | undefined;
  /** Inbox ids by lower-cased address, for the calls that name an inbox by its address. */
  private readonly inboxIds = new Map<string, string>();

  constructor(options: BurnboxOptions = {}) {
    const url = options.url ?? environment("BURNBOX_URL") ?? environment("BURNBOX_API");
    const apiKey = options.apiKey ?? environment("BURNBOX_API_KEY");
    if (!url || !apiKey) {
      throw new Error("burnbox: give url and apiKey, or set BURNBOX_URL and BURNBOX_API_KEY");
    }
    const base = url.replace(/\/+$/, "");
    this.api = base.endsWith(API_PREFIX) ? base : base + API_PREFIX;
    this.apiKey = apiKey;
    this.domain = options.domain ?? environment("BURNBOX_DOMAIN");
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** Send one request to `path` under /api/v1; the answer, or BurnboxError on an error
   * status. */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const url = new URL(this.api + path);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { Authorization: `Bearer ${this.apiKey}` };
    if (options.body !== undefined) headers["Content-Type"] = "application/json";
    const response = await this.fetch(url, {
      method, headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(options.timeoutMs ?? REQUEST_TIMEOUT_MS),
    });
    if (response.status >= 400) {
      let envelope: Json = {};
      try {
        const parsed = await response.json();
        if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) envelope = parsed;
      } catch {
        // Not JSON (a proxy's page): the status says what there is to say.
      }
      throw new BurnboxError(response.status, String(envelope.code ?? "http_error"),
        String(envelope.error ?? response.statusText), envelope.details);
    }
    return response;
  }

  private async json(method: string, path: string, options: RequestOptions = {}): Promise<Json> {
    return (await this.request(method, path, options)).json();
  }

  private async bytes(path: string): Promise<Uint8Array> {
    return new Uint8Array(await (await this.request("GET", path)).arrayBuffer());
  }

  /** Every item of a paginated list, one request per page of 100. */
  private async pages(path: string, query: Record<string, string | undefined> = {}):
      Promise<Json[]> {
    const items: Json[] = [];
    for (let page = 1; ; page++) {
      const body = await this.json("GET", path, { query: { ...query, page, per_page: PER_PAGE } });
      items.push(...body.data);
      if (page >= body.total_pages) return items;
    }
  }

  /** The inbox id `inbox` names. An address is looked up once (`GET
   * /inboxes/by-address/:address`: the newest inbox with that address, live or lapsed, that
   * the caller may view) and remembered. */
  private async inboxId(inbox: InboxRef, fresh = false): Promise<string> {
    if (typeof inbox !== "string") return inbox.id;
    if (!inbox.includes("@")) return inbox;
    const address = inbox.toLowerCase();
    const known = this.inboxIds.get(address);
    if (known && !fresh) return known;
    let match: Json;
    try {
      match = await this.json("GET", `/inboxes/by-address/${encodeURIComponent(address)}`);
    } catch (error) {
      if (!(error instanceof BurnboxError && error.status === 404)) throw error;
      throw new BurnboxError(404, "not_found", `no inbox ${inbox} for this key`);
    }
    this.inboxIds.set(address, String(match.id));
    return String(match.id);
  }

  /** Call `call` with the inbox's id. A remembered address whose inbox is gone (404) is looked
   * up again once: the address may belong to a newer inbox now. */
  private async withInbox<T>(inbox: InboxRef, call: (id: string) => Promise<T>): Promise<T> {
    const id = await this.inboxId(inbox);
    try {
      return await call(id);
    } catch (error) {
      const remembered = typeof inbox === "string" && inbox.includes("@");
      if (!(remembered && error instanceof BurnboxError && error.status === 404)) throw error;
      this.inboxIds.delete(inbox.toLowerCase());
      return call(await this.inboxId(inbox, true));
    }
  }

  /** A new inbox: `alias` is the local part (random when absent), `ttl` its lifetime (the
   * team's default when absent), `domain` its domain (see `BurnboxOptions.domain`). */
  async createInbox(options: CreateInboxOptions = {}): Promise<Inbox> {
    const body: Json = {};
    const domain = options.domain ?? this.domain;
    if (domain) body.domain = domain;
    else body.domain_assignment_id = await this.onlyAssignment();
    if (options.alias !== undefined) body.alias = options.alias;
    if (options.ttl !== undefined) body.ttl = goDuration(options.ttl);
    const inbox = toInbox(await this.json("POST", "/inboxes", { body }));
    this.inboxIds.set(inbox.address.toLowerCase(), inbox.id);
    return inbox;
  }

  /** The inbox (by id or address). */
  async getInbox(inbox: InboxRef): Promise<Inbox> {
    return this.withInbox(inbox, async (id) => toInbox(await this.json("GET", `/inboxes/${id}`)));
  }

  /** The active inboxes the key can see (one request per 100). */
  async listInboxes(): Promise<Inbox[]> {
    return (await this.pages("/inboxes")).map(toInbox);
  }

  /** Delete the inbox and its e-mails. */
  async deleteInbox(inbox: InboxRef): Promise<void> {
    await this.withInbox(inbox, (id) => this.request("DELETE", `/inboxes/${id}`));
    if (typeof inbox === "string") this.inboxIds.delete(inbox.toLowerCase());
  }

  /** Lengthen the inbox's life by `duration` (the team's default ttl when absent); never past
   * its creation plus the longest ttl allowed. */
  async extendInbox(inbox: InboxRef, options: { duration?: Duration } = {}): Promise<Inbox> {
    const body = options.duration === undefined ? {} : { duration: goDuration(options.duration) };
    return this.withInbox(inbox, async (id) =>
      toInbox(await this.json("POST", `/inboxes/${id}/extend`, { body })));
  }

  /** The oldest e-mail of the inbox matching every filter given, as soon as it is stored
   * (already there counts, unless `after` says otherwise). One request: the server holds it
   * until the e-mail is stored. Rejects with EmailNotReceived when `timeout` passes first. */
  async waitForEmail(inbox: InboxRef, options: WaitOptions = {}): Promise<Email> {
    const [email] = await this.waitForEmails(inbox, { ...options, count: 1 });
    return email;
  }

  /** The `count` oldest matching e-mails, as `waitForEmail` waits for one. */
  async waitForEmails(inbox: InboxRef, options: WaitOptions & { count: number }):
      Promise<Email[]> {
    const timeout = options.timeout ?? DEFAULT_WAIT_MS;
    const filters = { subject: options.subject, from: options.from, q: options.q,
      tag: options.tag, after: options.after };
    const wait = (path: string) => this.json("GET", path, {
      query: { ...filters, count: options.count, timeout: goDuration(timeout) },
      timeoutMs: milliseconds(timeout) + WAIT_GRACE_MS,
    });
    // An address is waited on by address: at a catch-all domain of the key's team it needs no
    // inbox yet (the first message creates it).
    const body = typeof inbox === "string" && inbox.includes("@")
      ? await wait(`/inboxes/by-address/${encodeURIComponent(inbox)}/emails/wait`)
      : await this.withInbox(inbox, (id) => wait(`/inboxes/${id}/emails/wait`));
    const emails = (body.emails as Json[]).map(toEmail);
    if (!body.timed_out) return emails;
    const address = await this.addressOf(inbox);
    const wanted = Object.entries(filters).filter(([, value]) => value !== undefined)
      .map(([name, value]) => `${name} ${JSON.stringify(value)}`).join(" and ");
    throw new EmailNotReceived(
      `${emails.length} of ${options.count} e-mail(s) matching ${wanted || "anything"} ` +
      `arrived in inbox ${address} within ${inWords(timeout)}`, address, emails);
  }

  /** The inbox's address for a message: as given, else asked for (an id of an inbox gone by
   * then stays an id). */
  private async addressOf(inbox: InboxRef): Promise<string> {
    if (typeof inbox === "string" && inbox.includes("@")) return inbox;
    if (typeof inbox !== "string" && "address" in inbox) return String(inbox.address);
    try {
      return (await this.getInbox(inbox)).address;
    } catch {
      return typeof inbox === "string" ? inbox : inbox.id;
    }
  }

  /** The inbox's e-mails (matching `q`, in the search syntax, when given), newest first, as
   * list items (one request per 100). */
  async listEmails(inbox: InboxRef, options: { q?: string } = {}): Promise<EmailSummary[]> {
    return this.withInbox(inbox, async (id) =>
      (await this.pages(`/inboxes/${id}/emails`, { q: options.q || undefined })).map(toSummary));
  }

  /** The e-mail with its bodies, codes, links and attachments. */
  async getEmail(emailId: string): Promise<Email> {
    return toEmail(await this.json("GET", `/emails/${emailId}`));
  }

  /** The e-mail once the spam engine's verdict and its attachments' checksums are in (each
   * usually well under a second after arrival), asking again every 200 ms; rejects with an
   * Error when `timeout` (30 s by default) passes first. */
  async waitForChecks(email: Email | string, options: { timeout?: Duration } = {}):
      Promise<Email> {
    const deadline = Date.now() + milliseconds(options.timeout ?? DEFAULT_WAIT_MS);
    let found = typeof email === "string" ? await this.getEmail(email) : email;
    while (checksPending(found)) {
      if (Date.now() > deadline) {
        throw new Error(`burnbox: the checks of e-mail ${found.id} did not finish in time`);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      found = await this.getEmail(found.id);
    }
    return found;
  }

  /** Put an e-mail into the inbox over HTTP, stored as though it had arrived over SMTP
   * (webhooks and streams hear of it): seeds a test without an SMTP client. The stored
   * e-mail. */
  async putMessage(inbox: InboxRef, message: PutMessage): Promise<Email> {
    const { attachments, ...fields } = message;
    const body = {
      ...fields,
      attachments: (attachments ?? []).map((part) => ({
        filename: part.filename, content: base64(part.content), content_type: part.contentType,
        content_id: part.contentId, inline: part.inline,
      })),
    };
    return this.withInbox(inbox, async (id) =>
      toEmail(await this.json("POST", `/inboxes/${id}/messages`, { body })));
  }

  /** Give the e-mail exactly these tags (none: take them all off); its tags after. */
  async setTags(emailId: string, tags: string[]): Promise<string[]> {
    return (await this.json("PUT", `/emails/${emailId}/tags`, { body: { tags } })).tags;
  }

  /** Add tags to the e-mail (those it has stay); its tags after. */
  async addTags(emailId: string, tags: string[]): Promise<string[]> {
    return (await this.json("POST", `/emails/${emailId}/tags`, { body: { tags } })).tags;
  }

  /** Take a tag off the e-mail (case-blind; one it lacks changes nothing); its tags after. */
  async removeTag(emailId: string, tag: string): Promise<string[]> {
    return (await this.json("DELETE", `/emails/${emailId}/tags/${encodeURIComponent(tag)}`))
      .tags;
  }

  /** Delete the e-mail and its attachments. */
  async deleteEmail(emailId: string): Promise<void> {
    await this.request("DELETE", `/emails/${emailId}`);
  }

  /** An attachment's bytes, named by the attachment (as an e-mail lists it) or by the e-mail's
   * and the attachment's ids. */
  async getAttachment(attachment: Attachment | string, attachmentId?: string):
      Promise<Uint8Array> {
    const [emailId, id] = typeof attachment === "string"
      ? [attachment, attachmentId] : [attachment.emailId, attachment.id];
    if (!id) throw new TypeError("getAttachment(emailId, attachmentId): give both ids");
    return this.bytes(`/emails/${emailId}/attachments/${id}`);
  }

  /** The e-mail's raw source, as received over SMTP. Given an e-mail (or list item), one
   * request; given only its id, two (its inbox is asked for first). */
  async getRaw(email: EmailSummary | string): Promise<Uint8Array> {
    const found = typeof email === "string" ? await this.getEmail(email) : email;
    return this.bytes(`/inboxes/${found.inboxId}/emails/${found.id}/raw`);
  }

  /** The address of an e-mail's sanitised HTML (`part: "html"`, the default) or its text
   * (`"text"`) as a plain page (`/view/<id>.html`, `/view/<id>.txt`), for a browser test to
   * open with `viewHeaders()` and screenshot. `remoteImages` loads the HTML's http(s)
   * images, which the page blocks otherwise. */
  viewUrl(email: EmailSummary | string, options: ViewOptions = {}): string {
    const part = options.part ?? "html";
    if (part !== "html" && part !== "text") {
      throw new TypeError(`viewUrl: part must be html or text, not ${String(part)}`);
    }
    const id = encodeURIComponent(typeof email === "string" ? email : email.id);
    const url = `${this.api.slice(0, -API_PREFIX.length)}/view/${id}.${part === "html" ? "html" : "txt"}`;
    return options.remoteImages && part === "html" ? `${url}?remote_images=true` : url;
  }

  /** The headers a browser sends to open `viewUrl` pages: for Playwright's
   * `extraHTTPHeaders`, or better a route of this service's address alone
   * (`page.route(url, ...)`), so the key never reaches the hosts of an e-mail's remote images. */
  viewHeaders(): Record<string, string> {
    return { Authorization: `Bearer ${this.apiKey}` };
  }

  /** Send the e-mail on to real mailboxes through the server's release relay: the queued
   * release. Needs the `team.emails.release` scope; BurnboxError 409 when the server has no
   * relay, 403 for a recipient no allow-list allows, 429 once the team's budget is spent. */
  async releaseEmail(email: EmailSummary | string, recipients: string[]): Promise<Release> {
    const id = typeof email === "string" ? email : email.id;
    return toRelease(await this.json("POST", `/emails/${id}/release`, { body: { recipients } }));
  }

  /** The e-mail's releases, newest first, each with its state and the relay's reply. */
  async listReleases(email: EmailSummary | string): Promise<Release[]> {
    const id = typeof email === "string" ? email : email.id;
    return (await this.json("GET", `/emails/${id}/releases`)).releases.map(toRelease);
  }

  /** Release the inbox's new mail matching `query` to `recipients` by itself (once per
   * e-mail; each release shows in `listReleases` with the rule's `ruleId`): the rule. Needs
   * the `team.emails.release` scope; BurnboxError 409 when the server has no relay, 403 for a
   * recipient no allow-list allows. */
  async addReleaseRule(inbox: InboxRef, query: string, recipients: string[]): Promise<ReleaseRule> {
    return this.withInbox(inbox, async (id) => toReleaseRule(
      await this.json("POST", `/inboxes/${id}/release-rules`, { body: { query, recipients } })));
  }

  /** The inbox's auto-release rules, oldest first. */
  async listReleaseRules(inbox: InboxRef): Promise<ReleaseRule[]> {
    return this.withInbox(inbox, async (id) =>
      (await this.json("GET", `/inboxes/${id}/release-rules`)).rules.map(toReleaseRule));
  }

  /** Delete one of the inbox's auto-release rules (its releases stay). */
  async deleteReleaseRule(inbox: InboxRef, ruleId: string): Promise<void> {
    await this.withInbox(inbox, (id) => this.request("DELETE", `/inboxes/${id}/release-rules/${ruleId}`));
  }

  /** The id of the key's one usable domain assignment (asked once per client). */
  private async onlyAssignment(): Promise<string> {
    if (this.assignmentId === undefined) {
      const usable = await this.json("GET", "/my/domains", { query: { per_page: 2 } });
      if (usable.total !== 1) {
        const names = (usable.data as Json[]).map((item) => item.domain_name).join(", ");
        throw new Error(`the API key's team can use ${usable.total} domains ` +
          `(${names || "none"}): give domain to Burnbox or createInbox`);
      }
      this.assignmentId = usable.data[0].id as string;
    }
    return this.assignmentId;
  }
}
