"""E-mails modelled on real sign-in products, for tuning the extraction rules.

Each e-mail reproduces, in our own words, the structure, code format, language and layout of
the e-mails a product sends as its published templates and message bundles render them, with
made-up values; `modelled_on` names the product. What we took from each:

- Ory Kratos: plain courier templates; the code alone on its line; verification and login links
  whose query strings hold the flow's UUID and the code.
- Keycloak: message bundles in many languages (Japanese among them); the code alone on a line or
  in a bold paragraph; links carrying signed action tokens.
- django-allauth: a site greeting and sign-off; sign-in codes of eight consonants in two groups
  (`XXXX-XXXX`), or nine digits in three groups (`XXX-XXX-XXX`); reset links with a key.
- ZITADEL: one-time passwords named per language inside a sentence; set-up and reset codes of
  capitals and digits in brackets; buttons whose links hold numeric ids and the code.
- Supabase Auth: short HTML templates with a verify link and the 6-digit token as an alternative.
- GitLab: HTML tables, the code in a cell of its own under a rule; pipeline and merge request
  notifications as negatives.
- Gitea / Forgejo: activation and reset links with long codes in the query string; issue
  notifications as negatives.
- Mastodon: confirmation links; follow and digest notifications as negatives.
- Auth0, Clerk, Better Auth: the code in the subject and body, table layouts, the device, IP
  address and place of the attempt below the code; receipts as negatives.
- Firebase Authentication: action links with an API key, a mode and the `oobCode`.
- Auth.js (NextAuth): one centred button in a table.
- Steam, GitHub, Microsoft account, Slack: labelled code lines, codes of capitals and digits.

`tests/models/mail/ingest/test_extract_products.py` measures the rules on this set and on the
held-out set in `products_heldout.py`.
"""

from __future__ import annotations

from tests.corpus.transactional import Sample

PRODUCTS: tuple[Sample, ...] = (
    # --- Ory Kratos ----------------------------------------------------------------------
    Sample("en-kratos-login-code", "Login to your account",
           "Hi,\n\nplease sign in to your account with this code:\n\n640917\n\nIt stops "
           "working in 15 minutes.\n", codes=("640917",), modelled_on="Ory Kratos"),
    Sample("en-kratos-code-then-flow", "Recover access to your account",
           "Hi,\n\nenter this recovery code to get back into your account:\n\n771203\n\n"
           "or open https://auth.lattice.example/self-service/recovery?code=771203&flow="
           "0b6e4d2c-9f1a-4c37-b8e5-2d7a9c1f6e03\n",
           codes=("771203",),
           links=(("https://auth.lattice.example/self-service/recovery?code=771203&flow="
                   "0b6e4d2c-9f1a-4c37-b8e5-2d7a9c1f6e03", ""),),
           modelled_on="Ory Kratos"),
    Sample("de-kratos-verification-html", "Bitte bestätige deine E-Mail-Adresse",
           "Hallo,\n\nbitte bestätige dein Konto mit diesem Code: 219455\n\noder über den Link: "
           "https://konto.werk.example/self-service/verification?flow=6c2f9e1a-3b8d-4f70-a5c4-"
           "e19d7b2c0f86&code=219455\n",
           "<p>Hallo,</p><p>bitte bestätige dein Konto mit diesem Code: <b>219455</b></p><p>"
           "<a href=\"https://konto.werk.example/self-service/verification?flow=6c2f9e1a-3b8d-"
           "4f70-a5c4-e19d7b2c0f86&amp;code=219455\">Konto bestätigen</a></p>",
           codes=("219455",),
           links=(("https://konto.werk.example/self-service/verification?flow=6c2f9e1a-3b8d-4f70-"
                   "a5c4-e19d7b2c0f86&code=219455", "Konto bestätigen"),),
           modelled_on="Ory Kratos"),
    Sample("en-kratos-link-only", "Please verify your email address",
           "Hi,\n\nplease verify your account by opening this link:\n\nhttps://auth.lattice."
           "example/self-service/verification?flow=5e1d3c7b-2a9f-4e68-b0d4-7c3a1f9e2b56&token="
           "Tq8Xv2Lr9Nz4\n",
           links=(("https://auth.lattice.example/self-service/verification?flow=5e1d3c7b-2a9f-"
                   "4e68-b0d4-7c3a1f9e2b56&token=Tq8Xv2Lr9Nz4", ""),),
           modelled_on="Ory Kratos"),
    # --- Keycloak ------------------------------------------------------------------------
    Sample("en-keycloak-email-code", "Verify email",
           None,
           "<p>Enter the following code to verify your email address.</p><p><b>48306215</b></p>",
           codes=("48306215",), modelled_on="Keycloak"),
    Sample("de-keycloak-email-code", "E-Mail verifizieren",
           "Bitte geben Sie den folgenden Code ein, um Ihre E-Mail-Adresse zu bestätigen.\n\n"
           "33981046\n\n.\n", codes=("33981046",), modelled_on="Keycloak"),
    Sample("ja-keycloak-reset-link", "パスワードのリセット",
           None,
           "<p>あなたのアカウントのパスワード変更が求められています。下のリンクからパスワードを"
           "リセットしてください。</p><p><a href=\"https://sso.kumo.example/realms/kumo/login-"
           "actions/action-token?key=eyJhbGciOiJIUzI1NiJ9.eyJqdGkiOiI5.Qm2&amp;client_id="
           "account\">パスワードのリセット</a></p><p>このリンクは5分間有効です。</p>",
           links=(("https://sso.kumo.example/realms/kumo/login-actions/action-token?key=eyJhbGci"
                   "OiJIUzI1NiJ9.eyJqdGkiOiI5.Qm2&client_id=account", "パスワードのリセット"),),
           modelled_on="Keycloak"),
    Sample("ja-keycloak-otp-removed-negative", "OTPの削除",
           "2026/11/24 10:15:02 に 203.0.113.9 からの操作でOTPが削除されました。心当たりが"
           "ない場合は、管理者に連絡してください。\n", modelled_on="Keycloak"),
    Sample("fr-keycloak-login-error-negative", "Erreur de connexion",
           "Une tentative de connexion a échoué sur votre compte le 24/11/2026 10:15 depuis "
           "198.51.100.77. Si ce n'était pas vous, contactez un administrateur.\n",
           modelled_on="Keycloak"),
    # --- django-allauth ------------------------------------------------------------------
    Sample("de-allauth-login-code", "[Stadtrad] Anmeldecode",
           "Hallo von Stadtrad!\n\nIhr Anmeldecode steht unten. Bitte geben Sie ihn im "
           "geöffneten Browserfenster ein.\n\nQZTB-WKNC\n\nSie können diese E-Mail ignorieren, "
           "wenn Sie die Anmeldung nicht angefordert haben.\n\nDanke, dass Sie Stadtrad nutzen!"
           "\nstadtrad.example\n", codes=("QZTB-WKNC",), modelled_on="django-allauth"),
    Sample("en-allauth-numeric-code", "[Ledger Lane] Sign-in code",
           "Hello from Ledger Lane!\n\nYour sign-in code is below; enter it in the browser "
           "window you have open.\n\n482-913-107\n\nYou can ignore this mail if you did not "
           "start this.\n\nThank you for using Ledger Lane!\nledgerlane.example\n",
           codes=("482913107",), modelled_on="django-allauth"),
    Sample("en-allauth-verification-code", "[Ledger Lane] Please confirm your email address",
           "Hello from Ledger Lane!\n\nYour email verification code is listed below. Please "
           "enter it in your open browser window.\n\nJMXR-TDFL\n\nThank you for using Ledger "
           "Lane!\nledgerlane.example\n", codes=("JMXR-TDFL",), modelled_on="django-allauth"),
    Sample("en-allauth-reset-code", "[Ledger Lane] Password reset code",
           "Hello from Ledger Lane!\n\nSomeone asked to reset the password of your account. "
           "Enter this password reset code to go on:\n\nDGPW-HZSB\n\nIf you did not ask for "
           "it, ignore this mail.\n", codes=("DGPW-HZSB",), modelled_on="django-allauth"),
    Sample("en-allauth-password-changed-negative", "[Ledger Lane] Password changed",
           "Hello from Ledger Lane!\n\nThe password of your account was changed on 24 Nov 2026 "
           "at 10:05 from 192.0.2.14. If it was not you, reset it at once: https://ledgerlane."
           "example/accounts/password/reset/\n",
           links=(("https://ledgerlane.example/accounts/password/reset/", ""),),
           modelled_on="django-allauth"),
    Sample("nl-allauth-confirm-link", "[Fietsclub] Bevestig je e-mailadres",
           "Hallo van Fietsclub!\n\nJe krijgt deze e-mail omdat gebruiker kees dit adres heeft "
           "opgegeven. Klopt dat? Open dan https://fietsclub.example/accounts/confirm-email/"
           "MQ:1tGx4k:Zr8vQ2mP7LwY9aB3cD5eF1gH/\n\nBedankt!\n",
           links=(("https://fietsclub.example/accounts/confirm-email/MQ:1tGx4k:Zr8vQ2mP7LwY9aB3c"
                   "D5eF1gH/", ""),),
           modelled_on="django-allauth"),
    # --- ZITADEL -------------------------------------------------------------------------
    Sample("de-zitadel-email-otp", "Einmalpasswort bestätigen",
           "Hallo Lena Vogel,\n\nbitte nutze den Knopf „Bestätigen“ oder kopiere das "
           "Einmalpasswort 58201934 in die Anmeldemaske, um dich innerhalb der nächsten fünf "
           "Minuten anzumelden.\n", codes=("58201934",), modelled_on="ZITADEL"),
    Sample("en-zitadel-password-reset", "Reset password",
           None,
           "<h1>Reset password</h1><p>Hello Tom Berg,</p><p>We got a request to reset your "
           "password. Use the button below (code 9T3HWQ). If you did not ask for it, ignore "
           "this mail.</p><p><a href=\"https://id.orbit.example/ui/login/password/init?userID="
           "263419870236471297&amp;code=9T3HWQ&amp;orgID=263419870211305473\">Reset password</a>"
           "</p>",
           codes=("9T3HWQ",),
           links=(("https://id.orbit.example/ui/login/password/init?userID=263419870236471297&"
                   "code=9T3HWQ&orgID=263419870211305473", "Reset password"),),
           modelled_on="ZITADEL"),
    Sample("ja-zitadel-verify-email", "メールアドレスの認証",
           None,
           "<p>山田 太郎 さん</p><p>新しいメールアドレスが追加されました。下のボタンからメール"
           "アドレスを認証してください。\uff08コード MZ7QK2\uff09</p><p><a href=\"https://id.sora."
           "example/ui/login/mail/verification?userID=287714025911111117&amp;code=MZ7QK2\">"
           "メールアドレスを認証</a></p>",
           codes=("MZ7QK2",),
           links=(("https://id.sora.example/ui/login/mail/verification?userID=287714025911111117"
                   "&code=MZ7QK2", "メールアドレスを認証"),),
           modelled_on="ZITADEL"),
    Sample("ja-zitadel-otp-sentence", "ワンタイムパスワード",
           "ワンタイムパスワードは 40619273 です。5分以内に入力してください。\n",
           codes=("40619273",), modelled_on="ZITADEL"),
    Sample("ja-zitadel-password-changed-negative", "パスワードが変更されました",
           "佐藤 さん\n\n2026年11月24日 10時05分にパスワードが変更されました。心当たりがない場合"
           "は、すぐにパスワードをリセットしてください。\n", modelled_on="ZITADEL"),
    # --- Supabase Auth -------------------------------------------------------------------
    Sample("en-supabase-confirm-signup", "Confirm your signup",
           None,
           "<h2>Confirm your signup</h2><p>Open this link to confirm your account:</p><p><a "
           "href=\"https://abcproj.supabase.example/auth/v1/verify?token=7f3c9a1e5b2d8f4c6a0e9b"
           "1d3f5a7c9e&amp;type=signup&amp;redirect_to=https://app.example\">Confirm my e-mail"
           "</a></p>",
           links=(("https://abcproj.supabase.example/auth/v1/verify?token=7f3c9a1e5b2d8f4c6a0e9b"
                   "1d3f5a7c9e&type=signup&redirect_to=https://app.example", "Confirm my e-mail"),),
           modelled_on="Supabase Auth"),
    Sample("es-supabase-magic-table", "Tu enlace de acceso",
           None,
           "<table><tr><td><h2>Inicia sesión</h2></td></tr><tr><td><a href=\"https://abcproj."
           "supabase.example/auth/v1/verify?token=pkce_2b9d7f&amp;type=magiclink\">Entrar</a>"
           "</td></tr><tr><td>O escribe este código:</td></tr><tr><td><b>530 882</b></td></tr>"
           "</table>",
           codes=("530882",),
           links=(("https://abcproj.supabase.example/auth/v1/verify?token=pkce_2b9d7f&type="
                   "magiclink", "Entrar"),),
           modelled_on="Supabase Auth"),
    Sample("en-supabase-reauth", "Confirm reauthentication",
           None, "<h2>Confirm it's you</h2><p>Enter the code: 066317</p>",
           codes=("066317",), modelled_on="Supabase Auth"),
    # --- GitLab --------------------------------------------------------------------------
    Sample("en-gitlab-email-otp", "Your GitLab sign-in code",
           "Help us protect your account\n\nUse this code to finish signing in:\n\n"
           "--------------------\n\n730518\n\n--------------------\n\nThe code is valid for "
           "60 minutes. If you did not try to sign in, change your password: "
           "https://gitlab.example/-/profile/password/edit\n",
           codes=("730518",),
           links=(("https://gitlab.example/-/profile/password/edit", ""),),
           modelled_on="GitLab"),
    Sample("de-gitlab-verification-table", "Bestätigen Sie Ihre Identität",
           None,
           "<table width=\"100%\"><tr><td>Jemand hat sich von einem neuen Ort aus angemeldet. "
           "Geben Sie zum Abschließen den folgenden Bestätigungscode ein:</td></tr><tr><td>"
           "<hr></td></tr><tr><td style=\"font-size:18px\"><b>914286</b></td></tr><tr><td>Der "
           "Code läuft in 60 Minuten ab.</td></tr></table>",
           codes=("914286",), modelled_on="GitLab"),
    Sample("en-gitlab-mr-negative", "Re: acme/web-shop | Add checkout retries (!2481)",
           "Jane Doe commented on merge request !2481:\n\nThe code in line 137 of "
           "payment/retry.py needs a timeout; see job #8812907 (exit code 1).\n\n"
           "https://gitlab.example/acme/web-shop/-/merge_requests/2481#note_1849203\n",
           links=(("https://gitlab.example/acme/web-shop/-/merge_requests/2481#note_1849203", ""),),
           modelled_on="GitLab"),
    Sample("en-gitlab-token-expiry-negative", "Your personal access token will expire soon",
           "Hi Jane,\n\nOne or more of your personal access tokens will expire in 7 days or "
           "less: ci-deploy (ID 1048).\n\nYou can create a new one at https://gitlab.example/-/"
           "user_settings/personal_access_tokens\n",
           links=(("https://gitlab.example/-/user_settings/personal_access_tokens", ""),),
           modelled_on="GitLab"),
    # --- Gitea / Forgejo -----------------------------------------------------------------
    Sample("en-gitea-reset-link", "Recover your account",
           "Hi ana,\n\nPlease open the following link within 3 hours to recover your account:"
           "\n\nhttps://git.teahouse.example/user/recover_account?code=2026112809310601800e4d"
           "8b2f6a1c9e3d7b5f0a2c4e6d8b1f3a5c7e9\n\nNot you? Ignore this e-mail.\n",
           links=(("https://git.teahouse.example/user/recover_account?code=2026112809310601800e4"
                   "d8b2f6a1c9e3d7b5f0a2c4e6d8b1f3a5c7e9", ""),),
           modelled_on="Gitea"),
    Sample("en-gitea-issue-negative", "Re: [infra/deploy] Build fails on arm64 (#412)",
           "@ana commented:\n\nThe code path in build.sh line 88 still uses GOARCH=amd64; "
           "verify with v1.22.3 and 2026-11-24 nightly.\n\nView it on Forgejo: "
           "https://code.forge.example/infra/deploy/issues/412#issuecomment-90812\n",
           links=(("https://code.forge.example/infra/deploy/issues/412#issuecomment-90812", ""),),
           modelled_on="Forgejo"),
    # --- Mastodon ------------------------------------------------------------------------
    Sample("en-mastodon-confirm", "Confirm your email address",
           None,
           "<table><tr><td><h1>One last step!</h1><p>Confirm your e-mail address to activate "
           "your account on toot.example.</p><p><a href=\"https://toot.example/auth/confirmation"
           "?confirmation_token=Lq2Wv8Kz5Tn1\">Verify e-mail address</a></p></td></tr></table>",
           links=(("https://toot.example/auth/confirmation?confirmation_token=Lq2Wv8Kz5Tn1",
                   "Verify e-mail address"),),
           modelled_on="Mastodon"),
    Sample("de-mastodon-follow-negative", "Dir folgt jetzt @kai",
           "@kai@norden.example folgt dir jetzt! Kai hat 1.284 Beiträge und 318 Folgende.\n"
           "https://norden.example/@kai\n\nE-Mail-Einstellungen ändern: https://toot.example/"
           "settings/preferences/notifications\n",
           links=(("https://norden.example/@kai", ""),
                  ("https://toot.example/settings/preferences/notifications", "")),
           modelled_on="Mastodon"),
    Sample("en-mastodon-2fa-enabled-negative", "Two-factor authentication enabled",
           "Two-factor authentication was turned on for your account. From now on, signing "
           "in needs a one-time code from your authenticator app. Keep your 10 recovery codes "
           "somewhere safe.\n", modelled_on="Mastodon"),
    # --- Auth0 ---------------------------------------------------------------------------
    Sample("en-auth0-verification-code", "Verify your identity in Brightside",
           None,
           "<table><tr><td><img src=\"https://cdn.auth0.example/brightside.png\" alt=\"\"></td>"
           "</tr><tr><td><p>Your verification code is:</p><h1>805331</h1><p>This code expires "
           "in 5 minutes.</p></td></tr></table>",
           codes=("805331",), modelled_on="Auth0"),
    Sample("fr-auth0-passwordless", "Votre code de connexion",
           "Bonjour,\n\nVotre code de connexion à Brightside :\n\n* * *\n\n229 104\n\n* * *\n\n"
           "Il expire dans 5 minutes.\n", codes=("229104",), modelled_on="Auth0"),
    Sample("en-auth0-blocked-negative", "Your account was blocked",
           "We blocked sign-ins to your account after 10 failed attempts from 203.0.113.40 on "
           "24 Nov 2026. Unblock it: https://brightside.auth0.example/unblock?ticket=Zk2Pq8Wm4"
           "Vx6#\n",
           links=(("https://brightside.auth0.example/unblock?ticket=Zk2Pq8Wm4Vx6#", ""),),
           modelled_on="Auth0"),
    # --- Clerk ---------------------------------------------------------------------------
    Sample("de-clerk-verification", "914082 ist dein Bestätigungscode",
           None,
           "<table><tr><td><h1>Bestätigungscode</h1></td></tr><tr><td>Gib diesen Code ein, "
           "wenn du danach gefragt wirst:</td></tr><tr><td style=\"font-size:24px\">914082</td>"
           "</tr><tr><td>Diese Anfrage kam von Firefox, macOS, 192.0.2.33, Hamburg, DE.</td>"
           "</tr></table>",
           codes=("914082",), modelled_on="Clerk"),
    Sample("en-clerk-magic-link", "Sign in to Pinecone",
           None,
           "<table><tr><td><h1>Sign in to Pinecone</h1></td></tr><tr><td><a href=\"https://"
           "accounts.pinecone.example/v1/verify?token=eyJhbGciOiJSUzI1NiJ9.eyJpbnMiOiIx.Uo9\">"
           "Sign in</a></td></tr><tr><td>This link expires in 10 minutes. Requested from "
           "Safari, iOS, 198.51.100.4, Porto, PT.</td></tr></table>",
           links=(("https://accounts.pinecone.example/v1/verify?token=eyJhbGciOiJSUzI1NiJ9."
                   "eyJpbnMiOiIx.Uo9", "Sign in"),),
           modelled_on="Clerk"),
    Sample("en-clerk-invitation-negative", "You're invited to join Pinecone",
           "Ada Byron invited you to join the organisation Analytical Engines on Pinecone.\n"
           "Accept: https://accounts.pinecone.example/accept?ticket=inv_2b9XkQm7Lp\n"
           "The invitation expires on 1 Dec 2026.\n",
           links=(("https://accounts.pinecone.example/accept?ticket=inv_2b9XkQm7Lp", ""),),
           modelled_on="Clerk"),
    # --- Better Auth ---------------------------------------------------------------------
    Sample("en-better-auth-otp", "Your one-time password",
           "Your one-time password for Lumen is 551208. It expires in 5 minutes.\n",
           codes=("551208",), modelled_on="Better Auth"),
    Sample("ja-better-auth-otp-sentence", "【Lumen】認証コードのお知らせ",
           "認証コードは482913です。有効期限は10分です。\nこのメールに心当たりがない場合は破棄"
           "してください。\n", codes=("482913",), modelled_on="Better Auth"),
    Sample("ja-better-auth-coupon-negative", "【Lumen】今月のお知らせ",
           "11月の新機能をお届けします。QRコードでのログインに対応しました。\nクーポンコード "
           "LUMEN2026 で初月20%オフ。お問い合わせ\uff1a03-1234-5678\n",
           modelled_on="Better Auth"),
    # --- Firebase Authentication ---------------------------------------------------------
    Sample("en-firebase-verify-email", "Verify your email for notes-7c1d",
           "Hello,\n\nFollow this link to verify your email address.\n\nhttps://notes-7c1d."
           "firebaseapp.example/__/auth/action?mode=verifyEmail&oobCode=X7nQ2kLp9WvR4tZ8mB3cF6"
           "hJ1dS5gA0e&apiKey=AIzaSyB8k2Lq7Vx3Mz9Pw4Rt6Yn1Hc5Jd0Fg2Se&lang=en\n\nIf you didn't "
           "ask to verify this address, you can ignore this email.\n",
           links=(("https://notes-7c1d.firebaseapp.example/__/auth/action?mode=verifyEmail&oob"
                   "Code=X7nQ2kLp9WvR4tZ8mB3cF6hJ1dS5gA0e&apiKey=AIzaSyB8k2Lq7Vx3Mz9Pw4Rt6Yn1Hc5Jd"
                   "0Fg2Se&lang=en", ""),),
           modelled_on="Firebase Authentication"),
    Sample("fr-firebase-reset", "Réinitialisez votre mot de passe pour notes-7c1d",
           "Bonjour,\n\nCliquez sur ce lien pour réinitialiser le mot de passe de notes-7c1d "
           "associé à votre adresse user@burnbox.test.\n\nhttps://notes-7c1d.firebaseapp."
           "example/__/auth/action?mode=resetPassword&oobCode=Hq4Zk8Wn2Lv6&apiKey=AIzaSyB8k2L"
           "q7Vx3&lang=fr\n\nSi vous n'avez pas demandé cette réinitialisation, ignorez cet "
           "e-mail.\n",
           links=(("https://notes-7c1d.firebaseapp.example/__/auth/action?mode=resetPassword&oob"
                   "Code=Hq4Zk8Wn2Lv6&apiKey=AIzaSyB8k2Lq7Vx3&lang=fr", ""),),
           modelled_on="Firebase Authentication"),
    # --- Auth.js (NextAuth) --------------------------------------------------------------
    Sample("en-nextauth-magic-link", "Sign in to board.example",
           "Sign in to board.example\nhttps://board.example/api/auth/callback/email?callbackUrl="
           "https%3A%2F%2Fboard.example%2Fdash&token=e4b8c2a6f0d9e1b3c5a7f9d2e4b6c8a0&email="
           "user%40burnbox.test\n\n",
           "<table width=\"100%\"><tr><td align=\"center\">Sign in to <strong>board.example"
           "</strong></td></tr><tr><td align=\"center\"><a href=\"https://board.example/api/auth"
           "/callback/email?callbackUrl=https%3A%2F%2Fboard.example%2Fdash&amp;token=e4b8c2a6f0"
           "d9e1b3c5a7f9d2e4b6c8a0&amp;email=user%40burnbox.test\">Sign in</a></td></tr><tr><td "
           "align=\"center\">If you did not request this email you can safely ignore it.</td>"
           "</tr></table>",
           links=(("https://board.example/api/auth/callback/email?callbackUrl=https%3A%2F%2F"
                   "board.example%2Fdash&token=e4b8c2a6f0d9e1b3c5a7f9d2e4b6c8a0&email=user%40"
                   "burnbox.test", "Sign in"),),
           modelled_on="Auth.js (NextAuth)"),
    # --- Steam, GitHub, Microsoft, Slack ----------------------------------------------------
    Sample("de-steam-guard", "Ihr Steam-Konto: Zugriff von einem neuen Gerät",
           "Hallo gamer_77,\n\nhier ist der Steam Guard-Code, den Sie zum Anmelden bei gamer_77 "
           "brauchen:\n\nFQTKM\n\nDiese E-Mail wurde wegen einer Anmeldung von 203.0.113.54 "
           "(DE) gesendet.\n", codes=("FQTKM",), modelled_on="Steam"),
    Sample("en-steam-purchase-negative", "Thank you for your Steam purchase!",
           "Account name: gamer_77\nInvoice: 4471092386512\nDate issued: 24 Nov, 2026 @ 9:41am "
           "PST\n\nHollow Dungeon 2    14,99€\nTotal: 14,99€\nPayment method: Wallet\n",
           modelled_on="Steam"),
    Sample("en-github-launch-code", "[GitHub] Your GitHub launch code",
           "Hey octo-ana!\n\nHere is your GitHub launch code. Enter it on the device to continue:"
           "\n\n80614372\n\nThis code is valid for 15 minutes.\n",
           codes=("80614372",), modelled_on="GitHub"),
    Sample("en-github-sign-in-negative", "[GitHub] A new sign-in to your account",
           "We noticed a new sign-in to your GitHub account.\n\nDevice: Chrome on Windows 11\n"
           "Location: Lisbon, PT (198.51.100.23)\nTime: 2026-11-24 10:41 UTC\n\nReview your "
           "sessions at https://github.example/settings/sessions\n",
           links=(("https://github.example/settings/sessions", ""),), modelled_on="GitHub"),
    Sample("en-github-recovery-codes-negative", "[GitHub] Your recovery codes were regenerated",
           "The two-factor recovery codes of your account were regenerated on 24 Nov 2026. "
           "Download them from https://github.example/settings/auth/recovery-codes and keep "
           "them safe.\n",
           links=(("https://github.example/settings/auth/recovery-codes", ""),),
           modelled_on="GitHub"),
    Sample("en-microsoft-security-code", "Microsoft account security code",
           "Microsoft account\n\nSecurity code\n\nPlease use the following security code for "
           "the Microsoft account ab***@burnbox.test.\n\nSecurity code: 3847\n\nIf you don't "
           "recognise the Microsoft account ab***@burnbox.test, you can click here to remove "
           "your email address from that account.\n", codes=("3847",),
           modelled_on="Microsoft account"),
    Sample("es-microsoft-security-code", "Código de seguridad de la cuenta Microsoft",
           "Cuenta Microsoft\n\nCódigo de seguridad\n\nUsa el siguiente código de seguridad para "
           "la cuenta Microsoft us***@burnbox.test.\n\n==========\n\n6120\n\n==========\n",
           codes=("6120",), modelled_on="Microsoft account"),
    Sample("en-slack-confirmation", "Slack confirmation code: JQX-7RM",
           "Confirm your email address\n\nYour confirmation code is below; enter it in your "
           "open browser window and we'll help you get signed in.\n\nJQX-7RM\n\nQuestions? "
           "https://slack.example/help\n",
           codes=("JQX-7RM",), links=(("https://slack.example/help", ""),),
           modelled_on="Slack"),
)
