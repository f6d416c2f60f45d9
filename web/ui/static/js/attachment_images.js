// Images of an e-mail's attachments in the reading pane: the thumbnails the worker makes of
// image attachments, and the inline images (`cid:`) of the HTML body.
//
// Both come from the API with the session's token, so neither can be a plain URL in an <img>:
// thumbnails become blob: URLs of this page (its policy allows blob: images), and inline
// images become data: URLs written into the HTML before it goes into the sandboxed frame,
// whose own policy allows data: images and nothing else it would have to fetch.

import { download } from "./api.js";
import { h } from "./dom.js";

// Inline images larger than this stay as they are (a broken image), so a hostile message
// cannot make the pane hold hundreds of megabytes as text.
const MAX_INLINE_BYTES = 5 * 1024 * 1024;

/** Load the thumbnail of attachment `attachmentId` of e-mail `emailId` into `img` (with the
 * session's token); `img` goes when it cannot be had. */
function loadThumbnail(img, emailId, attachmentId) {
  download(`/emails/${emailId}/attachments/${attachmentId}/thumbnail`).then((blob) => {
    img.src = URL.createObjectURL(blob);
    img.addEventListener("load", () => URL.revokeObjectURL(img.src), { once: true });
  }, () => img.remove());
}

/** An <img> of the attachment's thumbnail, or null when it has none. */
export function thumbnail(email, attachment) {
  if (!attachment.has_thumbnail) return null;
  const img = h("img", { class: "thumb", alt: `Preview of ${attachment.filename}`, width: "60", height: "60" });
  loadThumbnail(img, email.id, attachment.id);
  return img;
}

// List rows load their thumbnail only once they come near the screen: a page of 50 rows asks
// for the few a person sees, not one image per row up front.
const nearScreen = typeof IntersectionObserver === "function" ? new IntersectionObserver((entries) => {
  for (const entry of entries) {
    if (!entry.isIntersecting) continue;
    nearScreen.unobserve(entry.target);
    const { emailId, attachmentId } = entry.target.dataset;
    loadThumbnail(entry.target, emailId, attachmentId);
  }
}, { rootMargin: "200px" }) : null;

/** The small image of a list item's first image attachment (`email.thumbnail`, from the
 * list itself), or null when it has none: its box is sized before it loads, so the row never
 * moves, and its alt text names the file. */
export function listThumbnail(email) {
  if (!email.thumbnail) return null;
  const { attachment_id: attachmentId, filename } = email.thumbnail;
  const img = h("img", { class: "thumb thumb-row", alt: `Image attached: ${filename}`, width: "40", height: "40",
    dataset: { emailId: email.id, attachmentId } });
  if (nearScreen) nearScreen.observe(img);
  else loadThumbnail(img, email.id, attachmentId);
  return img;
}

/** The thumbnails of the e-mail's image attachments as a strip, or null when none has one. */
export function thumbnailStrip(email) {
  const images = email.attachments.filter((attachment) => attachment.has_thumbnail);
  if (!images.length) return null;
  return h("ul", { class: "thumbs", "aria-label": "Images attached" },
    images.map((attachment) => h("li", { title: attachment.filename }, thumbnail(email, attachment))));
}

function dataUrl(blob, type) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(new Blob([blob], { type }));
  });
}

// An image's `src` naming a part by Content-ID, as Burnbox's sanitiser writes every attribute
// (double-quoted, `&` as `&amp;`): the HTML is rewritten as text, never parsed into a document.
const CID_SOURCE = /(<img\b[^>]*?\ssrc=")cid:([^"]*)"/gi;

// The bare type of an image part: its parameters (a name="..." among them) would end the
// attribute the data: URL is written into.
function imageType(contentType) {
  const bare = contentType.split(";")[0].trim().toLowerCase();
  return /^image\/[a-z0-9.+-]+$/.test(bare) ? bare : "application/octet-stream";
}

function contentId(written) {
  const id = written.replaceAll("&amp;", "&");
  try { return decodeURIComponent(id); } catch { return id; }  // keep it as written
}

/** The e-mail's HTML with each `cid:` image it has the part of written in as a data: URL;
 * the HTML as it was when it shows none. */
export async function withInlineImages(email) {
  const html = email.body_html;
  const parts = new Map(email.attachments
    .filter((part) => part.content_id && part.content_type.startsWith("image/") && part.size_bytes <= MAX_INLINE_BYTES)
    .map((part) => [part.content_id, part]));
  if (!parts.size || !/cid:/i.test(html)) return html;
  const wanted = new Map();
  for (const [, , written] of html.matchAll(CID_SOURCE)) {
    const part = parts.get(contentId(written));
    if (part && !wanted.has(written)) wanted.set(written, part);
  }
  const sources = new Map();
  await Promise.all([...wanted].map(async ([written, part]) => {
    try {
      const blob = await download(`/emails/${email.id}/attachments/${part.id}`);
      sources.set(written, await dataUrl(blob, imageType(part.content_type)));
    } catch {
      // Gone or refused: the image stays broken, as a mail client shows a missing part.
    }
  }));
  if (!sources.size) return html;
  // A data: URL holds only base64's letters, `+`, `/`, `=`, `:`, `;` and `,`: nothing to escape.
  return html.replace(CID_SOURCE, (whole, head, written) =>
    sources.has(written) ? `${head}${sources.get(written)}"` : whole);
}
