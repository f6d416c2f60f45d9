"""Held-out transactional e-mails: written after the extraction rules were settled, and never
used to change them. `tests/models/mail/ingest/test_extract_heldout.py` measures the rules on them
and docs/testing-with-burnbox.md reports the figures as they are. When a rule is changed because of
one of these mails, move that mail into `transactional.py` (it is then a tuning mail) and write
new held-out ones.
"""

from __future__ import annotations

from tests.corpus.transactional import Sample

HELD_OUT: tuple[Sample, ...] = (
    Sample("en-bank-otp", "Your one-time passcode",
           "Dear customer,\n\nYou requested to sign in to Online Banking on 24/11/2026 at "
           "09:41.\nOne-time passcode: 55019283\n\nNever share this passcode. Our staff will "
           "never ask for it.\nCustomer service: 0800 123 4567\n", codes=("55019283",)),
    Sample("en-game-login", "Login code for your account",
           None,
           "<html><body><p>Hello Player,</p><p>Use this code to finish logging in:</p>"
           "<table><tr><td style='font-size:32px'><b>HX7-Q2M</b></td></tr></table>"
           "<p>Not you? <a href='https://games.example/security'>Secure your account</a></p>"
           "</body></html>",
           codes=("HX7-Q2M",), links=(("https://games.example/security", "Secure your account"),)),
    Sample("en-delivery-negative", "Your parcel is on its way",
           "Good news! Order #4410293 shipped today.\nTracking number: 1Z999AA10123456784\n"
           "Estimated delivery: Thursday, 26 November, between 10:00 and 14:00.\n"
           "Track it here: https://parcels.example/track/1Z999AA10123456784\n"
           "Collection point: 221B Baker Street, London NW1 6XE\n",
           links=(("https://parcels.example/track/1Z999AA10123456784", ""),)),
    Sample("en-invite-link", "You're invited to join Team Rocket on Boardly",
           "Ana invited you to Team Rocket.\n\nAccept the invitation:\n"
           "https://boardly.example/invite/accept?token=q8Zk2LmP91xV\n\n"
           "The link expires in 7 days.\n",
           links=(("https://boardly.example/invite/accept?token=q8Zk2LmP91xV", ""),)),
    Sample("en-receipt-negative", "Receipt for your payment of $48.20",
           "Thanks for your payment.\n\nAmount: $48.20\nCard ending in 4242\nInvoice "
           "INV-2026-00412\nDate: November 24, 2026\nQuestions? support@billing.example or "
           "+1 212 555 0199.\n"),
    Sample("de-login-code", "Ihr Anmeldecode",
           "Hallo Max,\n\nIhr Anmeldecode lautet 306917. Er ist 15 Minuten gültig.\n\n"
           "Falls Sie das nicht waren, ändern Sie bitte Ihr Passwort:\n"
           "https://konto.beispiel.example/passwort\n\nViele Grüße\nIhr Beispiel-Team\n"
           "Beispielweg 7, 80331 München\n",
           codes=("306917",), links=(("https://konto.beispiel.example/passwort", ""),)),
    Sample("de-newsletter-negative", "Nur heute: 30 % Rabatt",
           "Mit dem Gutscheincode HERBST30 sparen Sie heute 30 % auf alles.\n"
           "Gültig bis 30.11.2026. Hotline: 089 / 123 456 78\n"
           "Zum Shop: https://shop.beispiel.example/angebote\n",
           links=(("https://shop.beispiel.example/angebote", ""),)),
    Sample("fr-verification", "Code de vérification",
           "Bonjour,\n\nVoici votre code de vérification : 7 3 4 1 9 0\n\nIl expire dans 5 "
           "minutes.\n\nL'équipe Exemple\n", codes=("734190",)),
    Sample("fr-reset-link", "Réinitialisation de votre mot de passe",
           None,
           "<p>Bonjour Claire,</p><p>Pour choisir un nouveau mot de passe, "
           "<a href=\"https://compte.exemple.example/reinit?t=Zx81Kd&amp;u=5521\">cliquez "
           "ici</a>.</p><p>Ce lien est valable 1 heure.</p>",
           links=(("https://compte.exemple.example/reinit?t=Zx81Kd&u=5521", "cliquez ici"),)),
    Sample("es-2fa", "Tu código de seguridad",
           "Hola,\n\nTu código de seguridad es 640218.\nNo lo compartas con nadie.\n\n"
           "Si no solicitaste este código, visita https://cuenta.ejemplo.example/ayuda\n",
           codes=("640218",), links=(("https://cuenta.ejemplo.example/ayuda", ""),)),
    Sample("es-order-negative", "Confirmación de pedido 2026-88341",
           "Gracias por tu compra.\nPedido: 2026-88341\nTotal: 129,95 €\nEnvío a: Calle Mayor "
           "15, 3º B, 28013 Madrid\nTeléfono de contacto: 600 123 456\n"),
    Sample("it-otp", "Codice OTP per il pagamento",
           "Gentile cliente,\nil codice OTP per autorizzare il pagamento di 59,00 EUR è: "
           "918273\nIl codice scade tra 3 minuti.\n", codes=("918273",)),
    Sample("pt-confirm", "Confirme o seu e-mail",
           "Olá!\n\nO seu código de confirmação é 4471.\n\nObrigado,\nEquipa Exemplo\n",
           codes=("4471",)),
    Sample("nl-magic-link", "Inloggen bij Voorbeeld",
           None,
           "<p>Hoi Sanne,</p><p><a href='https://app.voorbeeld.example/login/magic/"
           "9f8e7d6c5b4a'>Inloggen</a></p><p>Deze link werkt 15 minuten.</p>",
           links=(("https://app.voorbeeld.example/login/magic/9f8e7d6c5b4a", "Inloggen"),)),
    Sample("en-pin-sms-style", "Your PIN",
           "Your PIN is 2580. Do not share it with anyone.\n", codes=("2580",)),
    Sample("en-code-before-word", "Security alert",
           "You're signing in from a new device (Chrome on Windows, 203.0.113.7).\n\n"
           "K4P9ZT is your verification code.\n", codes=("K4P9ZT",)),
)
