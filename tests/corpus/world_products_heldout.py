"""Held-out e-mails modelled on sign-in products of the languages and layouts the other corpora
leave out: written and committed before any rule was changed for `world_products.py`, and
never used to change one.

Each e-mail reproduces, in our own words, the structure, code format, language and layout of
the e-mails a product sends as its published templates and message bundles render them, with
made-up values; the negatives are the same products' receipts, order and delivery notices.
`modelled_on` names the product; none is in any other corpus.
`tests/models/mail/ingest/test_extract_world.py` measures the rules on this set.

When a rule is changed because of one of these mails, move that mail into
`world_products.py` and write a new held-out one in its place.
"""

# Mail in other scripts holds letters that look like Latin ones and full-width punctuation:
# that is what these samples are for.
# ruff: noqa: RUF001

from __future__ import annotations

from tests.corpus.transactional import Sample

WORLD_PRODUCTS_HELD_OUT: tuple[Sample, ...] = (
    # Microsoft Entra External ID: the one-time passcode in a table cell, a label above it.
    Sample("en-entra-otp", "Your Contoso Travel account verification code",
           None,
           """<table width="100%" cellpadding="0" cellspacing="0">
        <tr>
            <td style="padding: 0 24px;">
                <p style="font-size: 14px;">
                    Thanks for verifying your j.ortiz@burnbox.test account!
                </p>
            </td>
        </tr>
        <tr>
            <td style="padding: 0 24px;">
                <p style="font-size: 14px;">
                    Your code is:
                </p>
            </td>
        </tr>
        <tr>
            <td style="padding: 0 24px; font-size: 24px; font-weight: 600;">
                73920418
            </td>
        </tr>
        <tr>
            <td style="padding: 0 24px;">
                <p style="font-size: 14px;">
                    Sincerely,<br>
                    Contoso Travel
                </p>
            </td>
        </tr>
    </table>
""",
           codes=("73920418",), modelled_on="Microsoft Entra External ID"),
    Sample("zh-entra-otp", "您的 Contoso 帐户验证码",
           None,
           "<p>感谢你验证 li.wei@burnbox.test 帐户！</p><p>你的验证码是：<b>58203917</b></p>"
           "<p>谨致问候，<br>Contoso</p>",
           codes=("58203917",), modelled_on="Microsoft Entra External ID"),
    # Google Account: the code alone on its line under a sentence, a security footer.
    Sample("ko-google-verification", "Google 인증 코드",
           "Google 계정 인증 코드\n\n회원님의 Google 계정(user@burnbox.test)에 액세스하기 위해 "
           "인증 코드를 요청하셨습니다.\n\n인증 코드:\n\n620593\n\n이 코드를 요청하지 않았다면 "
           "다른 사람이 회원님의 계정에 액세스하려고 시도하는 것일 수 있습니다.\n",
           codes=("620593",), modelled_on="Google Account"),
    Sample("tr-google-verification", "Google doğrulama kodu",
           "Google doğrulama kodunuz\n\nGoogle Hesabınıza (user@burnbox.test) erişmek için bir "
           "doğrulama kodu istendi. Doğrulama kodunuz:\n\n418276\n\nBu kodu siz istemediyseniz "
           "başka biri hesabınıza erişmeye çalışıyor olabilir.\n",
           codes=("418276",), modelled_on="Google Account"),
    # Apple Account: "Your verification code is" in a centred block of an HTML-only mail.
    Sample("ar-apple-verification", "تحقق من عنوان بريدك الإلكتروني",
           None,
           """<div style="text-align: right;" dir="rtl">
      <p>
        عزيزي المستخدم،
      </p>
      <p>
        لقد تم استخدام عنوان البريد الإلكتروني هذا لإنشاء حساب Apple. للتحقق من أنه يخصك، أدخل
        رمز التحقق التالي في صفحة التحقق من البريد الإلكتروني:
      </p>
      <p style="font-size: 24px; font-weight: bold;">
        381047
      </p>
      <p>
        تنتهي صلاحية رموز التحقق بعد ثلاث ساعات.
      </p>
    </div>
""",
           codes=("381047",), modelled_on="Apple Account"),
    Sample("en-apple-receipt-negative", "Your receipt from Apple",
           "Apple Account: user@burnbox.test\nDate: 24 Nov 2026\nOrder ID: MT4Q29XPLK\n"
           "Document No.: 182930475610\nApple Music Individual (Monthly) $10.99\n"
           "Subtotal $10.99 Tax $0.98 Total $11.97\n",
           modelled_on="Apple Account"),
    # WeChat and Baidu: Chinese code mails.
    Sample("zh-wechat-email-bind", "微信帐号邮箱验证",
           "你好！\n\n你正在为微信帐号绑定邮箱，本次验证码为 640912，请在 30 分钟内完成验证。"
           "\n\n如非本人操作，请忽略此邮件。\n\n微信团队\n",
           codes=("640912",), modelled_on="WeChat"),
    Sample("zh-baidu-security-code", "百度帐号安全验证",
           None,
           """<table width="100%">
    <tr>
        <td>
            <p>
                尊敬的百度用户，您好！
            </p>
            <p>
                您正在进行安全验证操作，您的校验码为：
            </p>
        </td>
    </tr>
    <tr>
        <td style="font-size: 26px; color: #2e82ff; font-weight: bold;">
            295031
        </td>
    </tr>
    <tr>
        <td>
            <p>
                校验码有效期为 20 分钟，请勿泄露。
            </p>
        </td>
    </tr>
</table>
""",
           codes=("295031",), modelled_on="Baidu"),
    Sample("zh-huawei-id-code", "华为帐号验证码",
           "尊敬的华为帐号用户：\n\n您的验证码是：815206（有效期 10 分钟）。请勿将验证码泄露给"
           "他人。\n\n华为帐号团队\n2026年11月24日\n",
           codes=("815206",), modelled_on="Huawei ID"),
    Sample("zh-tw-xiaomi-code", "小米帳號驗證碼",
           "您好，\n\n您的小米帳號驗證碼為 307429，10 分鐘內有效。\n\n"
           "若非本人操作，請忽略此郵件。\n",
           codes=("307429",), modelled_on="Xiaomi Account"),
    # Korean shopping and finance.
    Sample("ko-coupang-verification", "[쿠팡] 이메일 인증번호",
           None,
           "<p>안녕하세요, 쿠팡입니다.</p><p>이메일 인증번호는 <b>904816</b> 입니다.</p>"
           "<p>인증번호는 발송 후 5분간 유효합니다.</p>",
           codes=("904816",), modelled_on="Coupang"),
    Sample("ko-toss-receipt-negative", "토스 결제 영수증",
           "결제가 완료되었습니다.\n승인번호 30918274\n결제금액 12,900원\n거래일시 2026.11.24 "
           "14:02\n고객센터 1599-4905\n",
           modelled_on="Toss"),
    # VK ID: Russian.
    Sample("ru-vk-login-code", "Код для входа в VK ID",
           None,
           "<p>Здравствуйте, Анна!</p><p>Код для входа в ваш аккаунт VK ID:</p>"
           "<p style=\"font-size:28px\"><b>472 019</b></p><p>Если вы не запрашивали код, "
           "просто проигнорируйте это письмо.</p>",
           codes=("472019",), modelled_on="VK ID"),
    # Grab and Shopee: South-East Asia.
    Sample("vi-grab-otp", "Mã xác thực Grab",
           "Mã xác thực (OTP) của bạn là 580317. Không chia sẻ mã này với bất kỳ ai, kể cả nhân "
           "viên Grab.\n",
           codes=("580317",), modelled_on="Grab"),
    Sample("id-shopee-verification", "Kode Verifikasi Shopee",
           "Halo,\n\nKode verifikasi Shopee kamu adalah 736102. Kode ini berlaku selama 15 "
           "menit.\n\nJANGAN berikan kode ini kepada siapa pun.\n",
           codes=("736102",), modelled_on="Shopee"),
    Sample("th-shopee-verification", "รหัสยืนยัน Shopee",
           None,
           "<p>สวัสดีค่ะ</p><p>รหัสยืนยันของคุณคือ <strong>194257</strong></p>"
           "<p>รหัสนี้จะหมดอายุใน 15 นาที</p>",
           codes=("194257",), modelled_on="Shopee"),
    # Paytm and Noon: Hindi and Arabic.
    Sample("hi-paytm-otp", "Paytm लॉगिन OTP",
           "प्रिय ग्राहक,\n\nPaytm में लॉगिन करने के लिए आपका OTP 6184 है। इसे किसी के साथ "
           "साझा न करें।\n",
           codes=("6184",), modelled_on="Paytm"),
    Sample("ar-noon-order-negative", "تم تأكيد طلبك",
           "شكراً لتسوقك من نون!\nرقم الطلب: N2026112400471\nالمجموع: 349.00 ريال\n"
           "تاريخ التوصيل المتوقع: 27/11/2026\nالرمز البريدي: 12271\n",
           modelled_on="Noon"),
    # Hepsiburada: Turkish.
    Sample("tr-hepsiburada-login", "Giriş doğrulama kodu",
           None,
           "<p>Merhaba,</p><p>Hepsiburada hesabınıza giriş için tek kullanımlık kodunuz:</p>"
           "<p><b>285930</b></p><p>Bu kodu kimseyle paylaşmayın.</p>",
           codes=("285930",), modelled_on="Hepsiburada"),
    # Nubank: Portuguese, a link written as text in an HTML-only mail.
    Sample("pt-nubank-confirm-link", "Confirme seu e-mail",
           None,
           "<p>Olá, Carla!</p><p>Para confirmar seu e-mail, acesse o endereço abaixo:</p>"
           "<p>https://conta.nubank.example/confirmar-email?token=8c41e7b2f09d</p>"
           "<p>O link vale por 24 horas.</p>",
           links=(("https://conta.nubank.example/confirmar-email?token=8c41e7b2f09d", ""),),
           modelled_on="Nubank"),
    # Stytch, Descope, SuperTokens, Twilio Verify: developer identity services.
    Sample("en-stytch-magic-link", "Your login request to Glimmer",
           None,
           """<table width="100%">
  <tr>
    <td align="center">
      <p>
        Click the button below to log in to Glimmer.
        This login link will expire in 60 minutes.
      </p>
      <a href="https://glimmer.example/authenticate?stytch_token_type=magic_links&amp;token=Zq7dN2bXw4kR"
         style="background-color: #106ee9; color: #ffffff;">
        Log in to Glimmer
      </a>
    </td>
  </tr>
</table>
""",
           links=(("https://glimmer.example/authenticate?stytch_token_type=magic_links&token="
                   "Zq7dN2bXw4kR", "Log in to Glimmer"),),
           modelled_on="Stytch"),
    Sample("es-descope-otp", "Tu código de acceso",
           None,
           """<div style="font-family: Arial, sans-serif;">
        <h2>
            Hola,
        </h2>
        <p>
            Usa el siguiente código para iniciar sesión en Brújula. Por tu seguridad, el código
            solo se puede usar una vez y caduca a los 10 minutos de haberse enviado.
        </p>
        <p style="font-size: 30px; letter-spacing: 8px; font-weight: bold;">
            603914
        </p>
    </div>
""",
           codes=("603914",), modelled_on="Descope"),
    Sample("en-supertokens-otp-link", "Login to your account",
           None,
           "<p>Enter the below OTP in your login screen.</p><p style=\"font-size:24px\">"
           "<b>810462</b></p><p>Or use this link: https://app.harbor.example/auth/verify?"
           "preAuthSessionId=k2Xw9&amp;tenantId=public#Qm7zT4vR</p><p>This is valid for 15 "
           "minutes.</p>",
           codes=("810462",),
           links=(("https://app.harbor.example/auth/verify?preAuthSessionId=k2Xw9&tenantId="
                   "public#Qm7zT4vR", ""),),
           modelled_on="SuperTokens"),
    Sample("de-twilio-verify", "Ihr Bestätigungscode",
           None,
           """<table width="100%">
      <tr>
        <td>
          <p>
            Ihr Bestätigungscode für Kranich lautet:
          </p>
        </td>
      </tr>
      <tr>
        <td align="center">
          <p style="font-size: 32px;">
            4Q7K9M
          </p>
        </td>
      </tr>
    </table>
""",
           codes=("4Q7K9M",), modelled_on="Twilio Verify"),
    # Rakuten and Zoho.
    Sample("ja-rakuten-auth-code", "【楽天】認証コードのお知らせ",
           "楽天会員様\n\nログインのための認証コードをお送りします。\n\n認証コード：302918\n\n"
           "有効期限は発行から30分です。\n",
           codes=("302918",), modelled_on="Rakuten"),
    Sample("fr-zoho-verification", "Code de vérification Zoho",
           None,
           """<div>
    <p>
        Bonjour,
    </p>
    <p>
        Pour finaliser la vérification de votre adresse e-mail sur Zoho, saisissez le code
        ci-dessous dans la fenêtre d'inscription. Ce code expire dans 15 minutes et ne peut
        servir qu'une seule fois.
    </p>
    <p style="font-size: 26px;">
        917340
    </p>
</div>
""",
           codes=("917340",), modelled_on="Zoho"),
)
