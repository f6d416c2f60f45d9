"""Transactional e-mails as services send them (sign-up, password reset, magic link, 2FA), and
receipts and newsletters as negatives, in English, German, French, Spanish, Italian,
Portuguese and Dutch, each with the codes and links a reader would pick out of it.

A sample has a text part, an HTML part or both; `links` are (href, text) pairs as
`models.mail.ingest.extract.extract_links` reports them (HTML anchors with their text first, then
the text part's new URLs with text ""). `message()` builds the MIME message.
"""

from __future__ import annotations

import email.policy
from dataclasses import dataclass
from email.message import EmailMessage


@dataclass(frozen=True)
class Sample:
    """One e-mail of the corpus and what extraction should find in it."""

    name: str
    subject: str
    text: str | None = None
    html: str | None = None
    codes: tuple[str, ...] = ()
    links: tuple[tuple[str, str], ...] = ()
    sender: str = "Service <no-reply@service.example>"
    # The product whose published templates this e-mail reproduces (structure, code format,
    # language, layout); "" for the mails written from everyday experience.
    modelled_on: str = ""

    def message(self) -> bytes:
        """The sample as a MIME message (multipart/alternative when it has both parts)."""
        mail = EmailMessage()
        mail["From"], mail["To"], mail["Subject"] = self.sender, "user@burnbox.test", self.subject
        mail["Message-ID"] = f"<{self.name}@service.example>"
        mail["Date"] = "Tue, 24 Nov 2026 10:00:00 +0000"
        if self.text is not None:
            mail.set_content(self.text)
            if self.html is not None:
                mail.add_alternative(self.html, subtype="html")
        else:
            mail.set_content(self.html or "", subtype="html")
        return mail.as_bytes(policy=email.policy.SMTP)


FOOTER_EN = ("\n--\nAcme Inc., 1600 Harbor Street, Suite 200, San Francisco, CA 94107\n"
             "Questions? Call +1 (415) 555-0134 or reply to this e-mail.\n")
FOOTER_DE = ("\n--\nBeispiel GmbH, Hauptstraße 12, 10115 Berlin\nTelefon: +49 30 1234567\n"
             "Handelsregister HRB 123456, Amtsgericht Charlottenburg\n")
FOOTER_FR = ("\n--\nExemple SAS, 42 rue de Rivoli, 75004 Paris\nTél. : 01 42 68 53 00\n"
             "RCS Paris 852 123 456\n")
FOOTER_ES = ("\n--\nEjemplo S.L., Calle de Alcalá 48, 28014 Madrid\nTeléfono: +34 912 345 678\n"
             "CIF B12345678\n")

SAMPLES: tuple[Sample, ...] = (
    # --- English -------------------------------------------------------------------------
    Sample("en-signup-code", "Verify your email address",
           "Hi there,\n\nThanks for signing up for Acme! Your verification code is:\n\n"
           "482913\n\nThis code expires in 10 minutes. If you didn't create an account, you can "
           "ignore this email." + FOOTER_EN, codes=("482913",)),
    Sample("en-subject-code", "739201 is your Instagram code",
           "Hi jane.doe,\n\nSomeone tried to sign up for an Instagram account with "
           "user@burnbox.test. If it was you, enter this confirmation code in the app:\n\n"
           "739201\n\nInstagram from Meta\nMeta Platforms, Inc., 1601 Willow Road, Menlo Park, "
           "CA 94025\n", codes=("739201",)),
    Sample("en-google-style", "G-582014 is your Google verification code",
           "G-582014 is your Google verification code. Don't share it with anyone.\n",
           codes=("582014",)),
    Sample("en-2fa-sms-like", "Your login code",
           "Your Acme login code: 6621\nIt is valid for 5 minutes. Never share this PIN.\n",
           codes=("6621",)),
    Sample("en-2fa-html", "Your sign-in code",
           text=None,
           html="<html><body><h1>Sign in to Ledgerly</h1><p>Enter the following one-time "
                "code to finish signing in:</p><p style=\"font-size:28px\"><b>305 817</b></p>"
                "<p>The code is valid until 10:45 UTC on 24 Nov 2026.</p>"
                "<p><a href=\"https://ledgerly.example/security\">Wasn't you?</a></p>"
                "<p>Ledgerly Ltd, 20 Station Road, Cambridge CB1 2JD</p></body></html>",
           codes=("305817",), links=(("https://ledgerly.example/security", "Wasn't you?"),)),
    Sample("en-otp-alnum", "Your OTP",
           "Use the OTP K7P2QX to complete your transaction of $1,249.00 at STORE 0042.\n"
           "Do not share it with anyone. Bank customer care: 1800 425 3800\n",
           codes=("K7P2QX",)),
    Sample("en-password-reset-link", "Reset your password",
           "Hello,\n\nWe received a request to reset the password for your account.\n"
           "Click the link below to choose a new one:\n\n"
           "https://app.service.example/reset?token=9f86d081884c7d659a2feaa0c55ad015\n\n"
           "This link expires in 24 hours. If you did not request a reset, no action is "
           "needed." + FOOTER_EN,
           links=(("https://app.service.example/reset?token=9f86d081884c7d659a2feaa0c55ad015",
                   ""),)),
    Sample("en-password-reset-html", "Password reset request",
           "Reset your password: https://shop.example/account/reset/Mg/c2f-8d7e1b2a\n",
           "<p>Hi Sam,</p><p>Someone asked to reset your password.</p><p><a "
           "href=\"https://shop.example/account/reset/Mg/c2f-8d7e1b2a\">Reset password</a></p>"
           "<p>Or paste this link: https://shop.example/account/reset/Mg/c2f-8d7e1b2a</p>"
           "<p><a href=\"https://shop.example/help\">Help centre</a> &middot; "
           "<a href=\"https://shop.example/unsubscribe?u=77\">Unsubscribe</a></p>",
           links=(("https://shop.example/account/reset/Mg/c2f-8d7e1b2a", "Reset password"),
                  ("https://shop.example/help", "Help centre"),
                  ("https://shop.example/unsubscribe?u=77", "Unsubscribe"))),
    Sample("en-magic-link", "Sign in to Notebook",
           None,
           "<table><tr><td><h2>Your sign-in link</h2><p>Click the button below to sign in. "
           "The link works once and expires in 15 minutes.</p>"
           "<a href=\"https://notebook.example/auth/magic?token=eyJhbGciOi.abc&amp;redirect=%2F\""
           " style=\"padding:12px\">Sign in to Notebook</a>"
           "<p>If the button doesn't work, copy this URL into your browser.</p></td></tr>"
           "</table>",
           links=(("https://notebook.example/auth/magic?token=eyJhbGciOi.abc&redirect=%2F",
                   "Sign in to Notebook"),)),
    Sample("en-magic-link-and-code", "Your Slackish confirmation code: QRT-4X9",
           "Confirm your email address\n\nYour confirmation code is below - enter it in your "
           "open browser window and we'll help you get signed in.\n\nQRT-4X9\n\n"
           "Or sign in with this link: https://slackish.example/z/confirm/AbCd1234?e=1\n",
           codes=("QRT-4X9",),
           links=(("https://slackish.example/z/confirm/AbCd1234?e=1", ""),)),
    Sample("en-2fa-backup", "Two-factor authentication enabled",
           "You turned on two-factor authentication.\n\nYour authenticator will now ask for a "
           "6-digit code at sign-in. Your recovery code is 8F3K-29QZ-7M1P; store it safely.\n"
           "Manage security: https://git.example/settings/security\n",
           codes=("8F3K-29QZ-7M1P",),
           links=(("https://git.example/settings/security", ""),)),
    Sample("en-pin-delivery", "Your parcel PIN",
           "Your parcel (tracking 1Z999AA10123456784) arrives today between 2:00 and 4:00 pm.\n"
           "Give the driver this PIN: 5306\n", codes=("5306",)),
    Sample("en-receipt", "Your receipt from Coffee Co. #1043-2281",
           "Receipt #1043-2281\nDate: 24/11/2026 09:14\n\n2 x Flat white      $9.00\n"
           "1 x Croissant       $4.50\nTax                 $1.22\nTotal              $14.72\n\n"
           "Paid with Visa ending in 4242.\nAuth code: approved\nStore 0017, 455 Market Street, "
           "San Francisco, CA 94105\nhttps://coffee.example/r/1043-2281\n",
           links=(("https://coffee.example/r/1043-2281", ""),)),
    Sample("en-order-confirmation", "Order confirmed: 112-8822391-5501234",
           "Thanks for your order!\n\nOrder number: 112-8822391-5501234\nPlaced on November 24, "
           "2026\nItems: USB-C cable (2 m) x2 - 12.99 USD\nShipping to: 350 Fifth Avenue, "
           "New York, NY 10118\n\nTrack your package: https://store.example/track/5501234\n",
           links=(("https://store.example/track/5501234", ""),)),
    Sample("en-newsletter-promo", "Black Friday: 30% off everything",
           None,
           "<h1>Black Friday is here</h1><p>Use promo code BF2026SAVE30 at checkout for 30% off "
           "all plans until November 30, 2026.</p><p><a href=\"https://saas.example/pricing?"
           "utm_source=newsletter\">See pricing</a></p><p>Sent to user@burnbox.test. "
           "<a href=\"https://saas.example/unsubscribe/abc\">Unsubscribe</a></p>"
           "<p>SaaS Corp, 500 Terry Francois St, San Francisco, CA 94158</p>",
           links=(("https://saas.example/pricing?utm_source=newsletter", "See pricing"),
                  ("https://saas.example/unsubscribe/abc", "Unsubscribe"))),
    Sample("en-newsletter-digest", "Your weekly digest",
           "Top stories this week\n\n1. Release 2.14 ships with 1500 fixes\n2. Meetup on "
           "12/03/2026 at 7:00 pm, 221 Baker Street, London NW1 6XE\n3. Our source code is now "
           "on GitHub: https://github.com/example/project\n\nRead more: "
           "https://news.example/digest/2026-47\n",
           links=(("https://github.com/example/project", ""),
                  ("https://news.example/digest/2026-47", ""))),
    Sample("en-welcome", "Welcome to Acme",
           "Welcome aboard! Your account user@burnbox.test is ready.\nGet started: "
           "https://acme.example/start\nNeed help? Call us at 1-800-555-0199 (code of conduct: "
           "https://acme.example/conduct).\n",
           links=(("https://acme.example/start", ""), ("https://acme.example/conduct", ""))),
    Sample("en-invoice", "Invoice INV-2026-0042 is available",
           "Invoice INV-2026-0042\nAmount due: EUR 1,250.00\nDue date: 2026-12-08\n"
           "Payment reference: 4471 0098 1123\nSort code: 20-00-00\n"
           "View: https://billing.example/invoices/INV-2026-0042\n",
           links=(("https://billing.example/invoices/INV-2026-0042", ""),)),
    Sample("en-verify-link", "Confirm your email",
           None,
           "<p>Please confirm your email address by clicking "
           "<a href=\"https://forum.example/confirm/8a7b6c5d\">this <b>link</b></a>.</p>"
           "<p>Verification is required before you can post.</p>",
           links=(("https://forum.example/confirm/8a7b6c5d", "this link"),)),
    Sample("en-sms-style-two-codes", "Security alert",
           "Your verification code is 118204. Your backup code is 993517.\n",
           codes=("118204", "993517")),
    Sample("en-code-before", "Authentication",
           "71942830 is your one-time passcode for Northwind Bank. It expires at 10:32.\n",
           codes=("71942830",)),
    # --- German --------------------------------------------------------------------------
    Sample("de-signup-code", "Bestätige deine E-Mail-Adresse",
           "Hallo,\n\nvielen Dank für deine Registrierung. Dein Bestätigungscode lautet:\n\n"
           "640271\n\nDer Code ist 30 Minuten gültig." + FOOTER_DE, codes=("640271",)),
    Sample("de-2fa", "Ihr Sicherheitscode",
           "Guten Tag,\n\nIhr Sicherheitscode für die Anmeldung am 24.11.2026 um 09:12 Uhr "
           "lautet: 774120\n\nFalls Sie sich nicht angemeldet haben, "
           "ändern Sie bitte Ihr Passwort." + FOOTER_DE, codes=("774120",)),
    Sample("de-tan", "Ihre TAN für die Überweisung",
           "Ihre mobileTAN für die Überweisung von 250,00 EUR an DE89 3704 0044 0532 0130 00 "
           "lautet: TAN 593047\nAuftrag vom 24.11.2026, 09:41 Uhr.\n", codes=("593047",)),
    Sample("de-password-reset", "Passwort zurücksetzen",
           "Hallo Max,\n\nüber folgenden Link kannst du ein neues Passwort festlegen:\n"
           "https://konto.beispiel.example/passwort/neu?t=Zx81Qw\n\nDer Link ist 2 Stunden "
           "gültig." + FOOTER_DE,
           links=(("https://konto.beispiel.example/passwort/neu?t=Zx81Qw", ""),)),
    Sample("de-magic-link", "Dein Anmeldelink",
           None,
           "<p>Hallo!</p><p>Klicke auf den Button, um dich anzumelden:</p>"
           "<p><a href=\"https://app.beispiel.example/login/link/f3e2d1\">Jetzt anmelden</a></p>"
           "<p>Der Link ist einmalig gültig.</p><p>Beispiel GmbH &middot; Hauptstraße 12 "
           "&middot; 10115 Berlin</p>",
           links=(("https://app.beispiel.example/login/link/f3e2d1", "Jetzt anmelden"),)),
    Sample("de-login-code-alnum", "Einmalcode für Ihre Anmeldung",
           "Ihr Einmalcode: X9F4-TQ72\nGültig bis 24.11.2026 10:15 Uhr.\n",
           codes=("X9F4-TQ72",)),
    Sample("de-receipt", "Ihre Bestellung 304-5511-88 ist unterwegs",
           "Vielen Dank für Ihre Bestellung vom 23.11.2026!\n\nBestellnummer: 304-5511-88\n"
           "Summe: 89,90 € inkl. 19 % MwSt.\nSendungsnummer: 00340434161094042557\n"
           "Lieferadresse: Lindenweg 7, 80331 München\nSendungsverfolgung: "
           "https://paket.example/verfolgen?id=00340434161094042557\n" + FOOTER_DE,
           links=(("https://paket.example/verfolgen?id=00340434161094042557", ""),)),
    Sample("de-newsletter-gutschein", "Nur heute: 20 % Rabatt",
           "Nur heute: Mit dem Gutscheincode WINTER2026 sparen Sie 20 % auf alles!\n"
           "Jetzt einkaufen: https://shop.beispiel.example/winter\nRabattcode gültig bis "
           "30.11.2026." + FOOTER_DE,
           links=(("https://shop.beispiel.example/winter", ""),)),
    Sample("de-verify-link", "Bitte bestätige deine Registrierung",
           "Bitte klicke zur Verifizierung deiner E-Mail-Adresse auf diesen Link:\n"
           "<https://forum.beispiel.example/verify/77aa>\n",
           links=(("https://forum.beispiel.example/verify/77aa", ""),)),
    Sample("de-pin", "Ihre neue PIN",
           "Sehr geehrte Kundin,\n\nIhre neue Karten-PIN lautet 8316. Bitte ändern Sie diese am "
           "Geldautomaten.\n", codes=("8316",)),
    Sample("de-invoice", "Rechnung Nr. 2026-11-0815",
           "Rechnungsnummer: 2026-11-0815\nRechnungsdatum: 24.11.2026\nBetrag: 1.499,00 EUR\n"
           "IBAN: DE02 1203 0000 0000 2020 51\nBitte geben Sie als Verwendungszweck 20261108 an.\n",
           ),
    # --- French --------------------------------------------------------------------------
    Sample("fr-signup-code", "Votre code de vérification",
           "Bonjour,\n\nMerci pour votre inscription. Voici votre code de vérification :\n\n"
           "915 362\n\nCe code expire dans 15 minutes." + FOOTER_FR, codes=("915362",)),
    Sample("fr-2fa", "Code de connexion",
           "Votre code de connexion à usage unique est 40718. Ne le communiquez à personne.\n",
           codes=("40718",)),
    Sample("fr-reset", "Réinitialisation de votre mot de passe",
           "Bonjour,\n\nPour choisir un nouveau mot de passe, cliquez sur le lien suivant :\n"
           "https://compte.exemple.example/reinitialiser?jeton=b7c9e1.\n\nCe lien est valable "
           "une heure." + FOOTER_FR,
           links=(("https://compte.exemple.example/reinitialiser?jeton=b7c9e1", ""),)),
    Sample("fr-magic-html", "Votre lien de connexion",
           "Connectez-vous : https://app.exemple.example/connexion/magique/9z8y7x\n",
           "<p>Bonjour,</p><p><a href=\"https://app.exemple.example/connexion/magique/9z8y7x\">"
           "Se connecter</a></p><p>Ce lien ne peut être utilisé qu'une fois.</p>",
           links=(("https://app.exemple.example/connexion/magique/9z8y7x", "Se connecter"),)),
    Sample("fr-code-promo", "-15 % avec le code promo HIVER15",
           "Profitez de -15 % sur tout le site avec le code promo HIVER15 jusqu'au 30/11/2026.\n"
           "https://boutique.exemple.example/soldes\n" + FOOTER_FR,
           links=(("https://boutique.exemple.example/soldes", ""),)),
    Sample("fr-receipt", "Confirmation de commande n° 7741203",
           "Commande n° 7741203 du 24/11/2026\nTotal : 42,50 €\nLivraison : 12 avenue des "
           "Champs-Élysées, 75008 Paris\nCode postal : 75008\nSuivi : "
           "https://colis.exemple.example/suivi/7741203\n",
           links=(("https://colis.exemple.example/suivi/7741203", ""),)),
    Sample("fr-sms-code", "Code de sécurité",
           "Code de sécurité : 6093. Il est valable 10 minutes.\n", codes=("6093",)),
    Sample("fr-confirm-alnum", "Confirmez votre adresse e-mail",
           None,
           "<p>Saisissez ce code de confirmation dans l'application :</p>"
           "<h2>B4N7QZ</h2><p>Vous n'êtes pas à l'origine de cette demande ? "
           "<a href=\"https://exemple.example/aide\">Contactez-nous</a>.</p>",
           codes=("B4N7QZ",), links=(("https://exemple.example/aide", "Contactez-nous"),)),
    Sample("fr-newsletter", "Les nouveautés de novembre",
           "Au programme ce mois-ci : la version 3.2, un webinaire le 02/12/2026 à 14h00 et "
           "nos 1200 nouveaux clients. Appelez-nous au 0800 123 456.\n"
           "https://exemple.example/blog/novembre-2026\n" + FOOTER_FR,
           links=(("https://exemple.example/blog/novembre-2026", ""),)),
    # --- Spanish -------------------------------------------------------------------------
    Sample("es-signup-code", "Tu código de verificación",
           "Hola,\n\nGracias por registrarte. Tu código de verificación es: 204816\n\n"
           "El código caduca en 10 minutos." + FOOTER_ES, codes=("204816",)),
    Sample("es-2fa", "Código de acceso",
           "Usa el código 5590 para iniciar sesión. No lo compartas con nadie.\n",
           codes=("5590",)),
    Sample("es-reset-html", "Restablecer contraseña",
           None,
           "<p>Hola Lucía:</p><p>Hemos recibido una solicitud para restablecer tu contraseña."
           "</p><p><a href=\"https://cuenta.ejemplo.example/restablecer/QWERTY12\">Restablecer "
           "contraseña</a></p><p>Si no fuiste tú, ignora este mensaje.</p>"
           "<p><a href=\"https://ejemplo.example/privacidad\">Privacidad</a></p>",
           links=(("https://cuenta.ejemplo.example/restablecer/QWERTY12",
                   "Restablecer contraseña"),
                  ("https://ejemplo.example/privacidad", "Privacidad"))),
    Sample("es-magic", "Tu enlace de acceso",
           "Entra en tu cuenta con este enlace (válido 15 minutos):\n"
           "https://app.ejemplo.example/acceso?t=mn12op34\n",
           links=(("https://app.ejemplo.example/acceso?t=mn12op34", ""),)),
    Sample("es-receipt", "Recibo de tu pedido 2026-88412",
           "Pedido: 2026-88412\nFecha: 24/11/2026\nImporte total: 59,95 €\nCódigo postal de "
           "entrega: 28014\nSeguimiento: https://envios.ejemplo.example/s/88412\n" + FOOTER_ES,
           links=(("https://envios.ejemplo.example/s/88412", ""),)),
    Sample("es-newsletter-cupon", "Ofertas de invierno",
           "Usa el cupón INVIERNO25 o el código de descuento FRIO2026 antes del 31/12/2026.\n"
           "https://tienda.ejemplo.example/ofertas\n",
           links=(("https://tienda.ejemplo.example/ofertas", ""),)),
    Sample("es-otp-alnum", "Clave de un solo uso",
           "Tu clave de un solo uso es: 7HK29D\nCaduca a las 18:30.\n", codes=("7HK29D",)),
    Sample("es-pin", "PIN de tu tarjeta",
           "El PIN provisional de tu tarjeta terminada en 7781 es 3920.\n", codes=("3920",)),
    # --- Italian, Portuguese, Dutch -----------------------------------------------------
    Sample("it-code", "Il tuo codice di verifica",
           "Ciao,\n\nil tuo codice di verifica è 831406. Scade tra 10 minuti.\n"
           "Esempio S.r.l., Via Roma 15, 00184 Roma, tel. 06 1234 5678\n", codes=("831406",)),
    Sample("it-reset", "Reimposta la password",
           "Per reimpostare la password visita https://account.esempio.example/reset/a1b2c3\n",
           links=(("https://account.esempio.example/reset/a1b2c3", ""),)),
    Sample("pt-code", "Seu código de acesso",
           "Olá! Seu código de acesso é 462 019. Ele expira em 5 minutos.\n",
           codes=("462019",)),
    Sample("pt-receipt", "Recibo da sua compra",
           "Pedido 88123 confirmado em 24/11/2026.\nTotal: R$ 149,90\nCEP: 01310-100\n"
           "Acompanhe: https://loja.exemplo.example/pedido/88123\n",
           links=(("https://loja.exemplo.example/pedido/88123", ""),)),
    Sample("nl-code", "Je verificatiecode",
           "Hallo,\n\nJe verificatiecode is 275318. Deze code is 10 minuten geldig.\n",
           codes=("275318",)),
    Sample("nl-newsletter", "Nieuwsbrief november",
           "Gebruik kortingscode NOV2026 voor 10% korting. Bezoek ons op Damrak 70, "
           "1012 LM Amsterdam.\nhttps://winkel.voorbeeld.example/nieuws\n",
           links=(("https://winkel.voorbeeld.example/nieuws", ""),)),
)
