// The npm `mailhog` client (blueimp/mailhog-node), unchanged, against Burnbox's
// MailHog-compatible API: every call it offers, on a scope holding the mail that
// tests/compat/mailhog/test_npm_client.py sent over SMTP before starting this file.
//
// Environment (set by that test): MAILHOG_URL (the scope's base, ending in /api), MAILHOG_AUTH
// ("user:api key"), MAILHOG_INBOX (the scope's address), MAILHOG_RELEASE_TO (an allowed
// release recipient), MAILHOG_FOREIGN_URL (another team's scope, same key).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const mailhog = require('mailhog')

function client(url, auth) {
  const base = new URL(url)
  return mailhog({
    protocol: base.protocol,
    host: base.hostname,
    port: Number(base.port),
    basePath: base.pathname,
    auth
  })
}

const env = process.env
const api = client(env.MAILHOG_URL, env.MAILHOG_AUTH)
const PNG_HEAD = Buffer.from([0x89, 0x50, 0x4e, 0x47])

async function bySubject(subject) {
  const all = await api.messages()
  const found = all.items.find(item => item.subject === subject)
  assert.ok(found, `no message "${subject}" among ${all.items.map(i => i.subject)}`)
  return found
}

test('messages lists every message, newest first, with the v2 envelope', async () => {
  const all = await api.messages()
  assert.equal(all.total, 4)
  assert.equal(all.count, 4)
  assert.equal(all.start, 0)
  assert.deepEqual(
    all.items.map(item => item.subject),
    ['Newsletter', 'Your invoice', 'Grüße aus Köln', 'Welcome to the shop']
  )
  for (const item of all.items) {
    assert.match(item.ID, /^[0-9a-f-]{36}$/)
    assert.equal(item.to, env.MAILHOG_INBOX)
    assert.ok(item.deliveryDate instanceof Date && !isNaN(item.deliveryDate))
    assert.ok(item.date instanceof Date && !isNaN(item.date))
  }
})

test('messages pages with start and limit', async () => {
  const page = await api.messages(1, 2)
  assert.equal(page.total, 4)
  assert.equal(page.count, 2)
  assert.equal(page.start, 1)
  assert.deepEqual(page.items.map(item => item.subject), ['Your invoice', 'Grüße aus Köln'])
  const past = await api.messages(10, 5)
  assert.equal(past.count, 0)
  assert.deepEqual(past.items, [])
})

test('an HTML message decodes to its text and its HTML', async () => {
  const mail = await bySubject('Welcome to the shop')
  assert.equal(mail.text.trim(), 'Welcome! Your code is 482913.')
  assert.match(mail.html, /<h1>Welcome<\/h1>/)
  assert.equal(mail.from, 'Shop <app@shop.example>')
  assert.equal(mail.replyTo, 'help@shop.example')
  assert.equal(mail.cc, 'boss@shop.example')
  assert.deepEqual(mail.attachments, [])
})

test('non-ASCII headers and bodies decode', async () => {
  const mail = await bySubject('Grüße aus Köln')
  // The client decodes Q-encoded words without turning "_" back into a space, against
  // MailHog as here: the header is MailHog's, byte for byte.
  assert.equal(mail.from, 'Jürgen_Müller <juergen@shop.example>')
  assert.match(mail.Content.Headers.From[0], /^=\?utf-8\?q\?J=C3=BCrgen_M=C3=BCller\?= /)
  assert.equal(mail.text.trim(), 'Viele Grüße, schönen Tag! ✓')
})

test('attachments are listed with their names, types and encoded bodies', async () => {
  const mail = await bySubject('Your invoice')
  assert.deepEqual(
    mail.attachments.map(part => [part.name, part.type.split(';')[0], part.encoding]),
    [
      ['invoice.pdf', 'application/pdf', 'base64'],
      ['report.csv', 'text/csv', 'base64']
    ]
  )
  const pdf = api.decode(mail.attachments[0].Body, 'base64', 'binary')
  assert.ok(pdf.startsWith('%PDF-1.4'))
  assert.equal(mail.text.trim(), 'Your invoice is attached.')
})

test('an inline image is a part of the message beside its HTML', async () => {
  const mail = await bySubject('Newsletter')
  assert.match(mail.html, /<img src="cid:logo@shop.example">/)
  const image = mail.MIME.Parts.find(part => part.Headers['Content-ID'])
  assert.deepEqual(image.Headers['Content-ID'], ['<logo@shop.example>'])
  const bytes = Buffer.from(image.Body.replace(/\r\n/g, ''), 'base64')
  assert.deepEqual(bytes.subarray(0, 4), PNG_HEAD)
})

test('search finds by from, to and containing, newest first', async () => {
  const from = await api.search('juergen@shop.example', 'from')
  assert.deepEqual(from.items.map(item => item.subject), ['Grüße aus Köln'])
  const to = await api.search(env.MAILHOG_INBOX, 'to')
  assert.equal(to.total, 4)
  const containing = await api.search('482913')
  assert.deepEqual(containing.items.map(item => item.subject), ['Welcome to the shop'])
  const paged = await api.search('shop.example', 'containing', 1, 1)
  assert.equal(paged.total, 4)
  assert.equal(paged.count, 1)
  assert.equal(paged.start, 1)
  const none = await api.search('nothing-like-this-anywhere')
  assert.equal(none.total, 0)
  assert.deepEqual(none.items, [])
})

test('latestFrom, latestTo and latestContaining answer one message or nothing', async () => {
  assert.equal((await api.latestFrom('app@shop.example')).subject, 'Newsletter')
  assert.equal((await api.latestTo(env.MAILHOG_INBOX)).subject, 'Newsletter')
  assert.equal((await api.latestContaining('attached')).subject, 'Your invoice')
  assert.equal(await api.latestContaining('nothing-like-this-anywhere'), 0)
})

test('encode and decode round-trip', () => {
  const text = 'Grüße ✓'
  for (const encoding of ['base64', 'quoted-printable']) {
    assert.equal(api.decode(api.encode(text, encoding), encoding), text)
  }
})

test('releaseMessage releases through Burnbox, whatever SMTP host it names', async () => {
  const mail = await bySubject('Welcome to the shop')
  const response = await api.releaseMessage(mail.ID, {
    host: 'smtp.elsewhere.example',
    port: '25',
    email: env.MAILHOG_RELEASE_TO
  })
  assert.equal(response.statusCode, 200)
})

test('deleteMessage deletes one message', async () => {
  const mail = await bySubject('Grüße aus Köln')
  const response = await api.deleteMessage(mail.ID)
  assert.equal(response.statusCode, 200)
  const all = await api.messages()
  assert.equal(all.total, 3)
  assert.ok(!all.items.some(item => item.ID === mail.ID))
})

test('another team\'s scope and a wrong key are refused, and change nothing', async () => {
  // Both answer plain text (404 page not found, 401 Unauthorized), which the client cannot
  // read as JSON: each call rejects.
  const foreign = client(env.MAILHOG_FOREIGN_URL, env.MAILHOG_AUTH)
  await assert.rejects(foreign.messages(), SyntaxError)
  await assert.rejects(foreign.deleteAll(), SyntaxError)
  const wrong = client(env.MAILHOG_URL, 'ci:bb_' + '0'.repeat(64))
  await assert.rejects(wrong.messages(), SyntaxError)
  await assert.rejects(wrong.deleteAll(), SyntaxError)
  assert.equal((await api.messages()).total, 3)
})

test('deleteAll deletes every message of the scope', async () => {
  const response = await api.deleteAll()
  assert.equal(response.statusCode, 200)
  const all = await api.messages()
  assert.equal(all.total, 0)
  assert.equal(all.count, 0)
})
