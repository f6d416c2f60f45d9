"""E-mails modelled on sign-in products of the languages and layouts the other corpora leave
out, for tuning the extraction rules.

Each e-mail reproduces, in our own words, the structure, code format, language and layout of
the e-mails a product sends as its published templates, default messages and message bundles
render them, with made-up values; `modelled_on` names the product. None of these products is
in `products.py` or `products_heldout.py`. What the set brings:

- the words that announce a code in the languages identity products ship beyond the European
  ones and Japanese: Chinese (验证码, 驗證碼, 动态码), Korean (인증번호, 인증 코드), Arabic
  (رمز التحقق), Hindi (सत्यापन कोड), Turkish (doğrulama kodu), Russian and Ukrainian (код),
  Vietnamese (mã xác minh), Indonesian (kode verifikasi), Thai (รหัสยืนยัน), Polish (kod) and
  Swedish (verifieringskod), with the particles those languages put right against a number;
- HTML-only e-mails laid out by template engines, whose indentation puts hundreds of
  characters of white space between a label and its code;
- HTML-only e-mails whose link is written as text (no anchor), as services that send a
  plain-text template as HTML do (Amazon Cognito's default message among them);
- negatives in the same languages: order numbers, dates, phone numbers, prices, postcodes and
  discount codes next to the same words.

`tests/models/mail/ingest/test_extract_world.py` measures the rules on this set and on the held-out
set in `world_products_heldout.py`.
"""

# Mail in other scripts holds letters that look like Latin ones and full-width punctuation:
# that is what these samples are for.
# ruff: noqa: RUF001

from __future__ import annotations

from tests.corpus.transactional import Sample

WORLD_PRODUCTS: tuple[Sample, ...] = (
    # --- Amazon Cognito: a default message sent as HTML, plain text inside ---------------------
    Sample("en-cognito-default-code", "Your verification code",
           None, "Your verification code is 804127. ",
           codes=("804127",), modelled_on="Amazon Cognito"),
    Sample("en-cognito-default-link", "Your verification link",
           None,
           "Please click the link below to verify your email address. https://auth.ledgerline."
           "example/confirmUser?client_id=5q1k9vd2mrb4e6hq0c3s&user_name=3f2d7a10-4b6e-4c39"
           "&confirmation_code=771045 ",
           links=(("https://auth.ledgerline.example/confirmUser?client_id=5q1k9vd2mrb4e6hq0c3s&"
                   "user_name=3f2d7a10-4b6e-4c39&confirmation_code=771045", ""),),
           modelled_on="Amazon Cognito"),
    Sample("es-cognito-forgot-password", "Restablecer contraseña",
           None,
           "<p>Hola,</p>\n<p>Tu código para restablecer la contraseña es 5529</p>\n"
           "<p>Si no lo has pedido tú, ignora este mensaje.</p>",
           codes=("5529",), modelled_on="Amazon Cognito"),
    # --- Okta: Velocity templates, a deep table layout, the code in a cell of its own ----------
    Sample("en-okta-email-challenge", "One-time verification code",
           None,
           """<html>
  <body>
    <table role="presentation" width="100%">
      <tr>
        <td align="center">
          <table role="presentation" width="600">
            <tr>
              <td style="padding: 24px 32px;">
                <h1 style="font-size: 20px;">
                  Verify your identity
                </h1>
              </td>
            </tr>
            <tr>
              <td style="padding: 0 32px;">
                <p>
                  Hi Daniel,
                </p>
                <p>
                  You have requested an email verification code to sign in to Northwind.
                  Enter the code below in the browser window that asked for it.
                </p>
              </td>
            </tr>
            <tr>
              <td style="padding: 16px 32px;">
                <p style="font-size: 12px; color: #6e6e78;">
                  Verification code
                </p>
              </td>
            </tr>
            <tr>
              <td style="padding: 0 32px 24px;">
                <span style="font-size: 28px; font-weight: bold; letter-spacing: 4px;">
                  615208
                </span>
              </td>
            </tr>
            <tr>
              <td style="padding: 0 32px;">
                <p>
                  This code expires in 5 minutes. If you didn't try to sign in,
                  <a href="https://northwind.okta.example/enduser/settings">review your account</a>.
                </p>
              </td>
            </tr>
          </table>
        </td>
      </tr>
    </table>
  </body>
</html>
""",
           codes=("615208",),
           links=(("https://northwind.okta.example/enduser/settings", "review your account"),),
           modelled_on="Okta"),
    Sample("de-okta-password-reset", "Passwort zurücksetzen",
           None,
           """<table role="presentation" width="100%">
  <tr>
    <td>
      <p>
        Hallo Petra,
      </p>
      <p>
        für Ihr Konto bei Lindner Logistik wurde das Zurücksetzen des Passworts angefordert.
      </p>
      <p>
        <a href="https://lindner.okta.example/signin/reset-password/YT5wQ0rM2kLs9BfXe7"
           style="background: #1662dd; color: #ffffff; padding: 10px 24px;">
          Passwort zurücksetzen
        </a>
      </p>
      <p>
        Der Link ist 60 Minuten gültig. Sie können stattdessen auch diesen Code eingeben:
      </p>
      <p>
        <b>
          903174
        </b>
      </p>
    </td>
  </tr>
</table>
""",
           codes=("903174",),
           links=(("https://lindner.okta.example/signin/reset-password/YT5wQ0rM2kLs9BfXe7",
                   "Passwort zurücksetzen"),),
           modelled_on="Okta"),
    # --- Alibaba Cloud (Direct Mail) and Tencent Cloud: Chinese code templates -----------------
    Sample("zh-aliyun-register-code", "【云朵商城】注册验证码",
           "您好！\n\n您正在注册云朵商城账号，验证码为：482917，5分钟内有效。为了您的账号安全，"
           "请勿将验证码告诉他人。\n\n如非本人操作，请忽略本邮件。\n\n云朵商城团队\n",
           codes=("482917",), modelled_on="Alibaba Cloud"),
    Sample("zh-aliyun-login-html", "登录验证",
           None,
           """<div style="max-width: 600px; margin: 0 auto;">
    <div style="padding: 20px;">
        <p>
            尊敬的用户：
        </p>
        <p>
            您正在登录青禾云控制台，本次操作的验证码是：
        </p>
        <div style="font-size: 30px; font-weight: bold; color: #ff6a00; text-align: center;">
            730561
        </div>
        <p>
            验证码10分钟内有效，请勿泄露给他人。
        </p>
    </div>
</div>
""",
           codes=("730561",), modelled_on="Alibaba Cloud"),
    Sample("zh-tencent-cloud-order-negative", "订单支付成功通知",
           "尊敬的腾讯云用户：\n\n您的订单 20261124153012 已支付成功，支付金额 ¥ 1299.00。"
           "订单号：88213045，下单时间：2026-11-24 15:30:12。\n\n如有疑问请拨打客服电话 "
           "4009100100。\n",
           modelled_on="Tencent Cloud"),
    Sample("zh-tencent-cloud-email-code", "邮箱验证",
           "您好，\n\n您正在进行邮箱验证，请在验证页面输入以下验证码：\n\n526039\n\n"
           "验证码30分钟内有效。\n",
           codes=("526039",), modelled_on="Tencent Cloud"),
    # --- Casdoor and Logto: open-source identity with Chinese and Korean bundles --------------
    Sample("zh-casdoor-code", "Casdoor 验证码",
           None,
           "<div><p>您好，</p><p>您的验证码是 <b>390184</b>，请在 5 分钟内输入。</p>"
           "<p>感谢使用 Casdoor。</p></div>",
           codes=("390184",), modelled_on="Casdoor"),
    Sample("zh-tw-logto-sign-in", "驗證碼",
           None,
           "<p>你正在登入蒼穹帳號，你的驗證碼是 640283。</p><p>驗證碼將在 10 分鐘後失效。</p>",
           codes=("640283",), modelled_on="Logto"),
    Sample("ko-logto-register", "인증 코드",
           None,
           "<p>가입을 완료하려면 아래 인증 코드를 입력하세요.</p><p><strong>817302</strong></p>"
           "<p>코드는 10분 후에 만료됩니다.</p>",
           codes=("817302",), modelled_on="Logto"),
    # --- Naver and Kakao: Korean number words, particles against the number -------------------
    Sample("ko-naver-auth-number", "[네이버] 인증번호 안내",
           "안녕하세요, 네이버입니다.\n\n요청하신 인증번호는 [582931]입니다.\n"
           "인증번호를 입력창에 입력해 주세요.\n\n본 메일은 발신 전용입니다. 고객센터 1588-3820\n",
           codes=("582931",), modelled_on="Naver"),
    Sample("ko-kakao-verify", "카카오계정 이메일 인증",
           None,
           """<table width="100%">
    <tr>
        <td>
            <p>
                카카오계정 이메일 인증을 위해 아래 인증번호를 입력해 주세요.
            </p>
        </td>
    </tr>
    <tr>
        <td style="font-size: 32px; font-weight: bold;">
            473016
        </td>
    </tr>
    <tr>
        <td>
            <p>
                인증번호는 30분 동안 유효합니다.
            </p>
        </td>
    </tr>
</table>
""",
           codes=("473016",), modelled_on="Kakao"),
    Sample("ko-kakao-order-negative", "주문이 완료되었습니다",
           "주문번호 20261124-0071 의 결제가 완료되었습니다.\n결제 금액: 39,000원\n"
           "배송지: 서울특별시 강남구 테헤란로 152, 06236\n문의: 02-1577-3754\n",
           modelled_on="Kakao"),
    # --- Yandex ID and VK: Russian -------------------------------------------------------------
    Sample("ru-yandex-confirmation-code", "Код подтверждения",
           "Здравствуйте!\n\nВаш код подтверждения: 294716\n\nВведите его на странице входа. "
           "Никому не сообщайте этот код.\n\nС уважением,\nЯндекс ID\n",
           codes=("294716",), modelled_on="Yandex ID"),
    Sample("ru-yandex-order-negative", "Заказ оформлен",
           "Ваш заказ № 48213907 оформлен 24.11.2026.\nСумма: 2 490 ₽\nДоставка: 115035, "
           "Москва, ул. Садовническая, 82\nТелефон поддержки: 8 800 250-96-39\n",
           modelled_on="Yandex ID"),
    Sample("uk-yandex-login", "Вхід до акаунта",
           None,
           "<p>Ваш одноразовий код для входу: <b>518204</b></p><p>Код діє 10 хвилин.</p>",
           codes=("518204",), modelled_on="Yandex ID"),
    # --- Turkish marketplaces ------------------------------------------------------------------
    Sample("tr-trendyol-verification", "Doğrulama Kodunuz",
           "Merhaba,\n\nTrendyol hesabınız için doğrulama kodunuz: 630918\n\nBu kod 3 dakika "
           "boyunca geçerlidir. Kodu kimseyle paylaşmayın.\n",
           codes=("630918",), modelled_on="Trendyol"),
    Sample("tr-trendyol-discount-negative", "Sepetinde indirim var!",
           "Sepetindeki ürünlerde %20 indirim! İndirim kodu: YENI2026\nSipariş numarası: "
           "712940385\nKampanya 30.11.2026 tarihine kadar geçerlidir.\nMüşteri hizmetleri: "
           "0850 333 0 800\n",
           modelled_on="Trendyol"),
    # --- Hindi and Indian English: Flipkart -----------------------------------------------------
    Sample("hi-flipkart-otp", "आपका Flipkart सत्यापन कोड",
           "नमस्ते,\n\nआपका सत्यापन कोड 482095 है। यह कोड 10 मिनट तक मान्य है।\n\nकृपया इसे "
           "किसी के साथ साझा न करें।\n",
           codes=("482095",), modelled_on="Flipkart"),
    Sample("hi-flipkart-order-negative", "आपका ऑर्डर भेज दिया गया है",
           "आपका ऑर्डर OD428197350012 भेज दिया गया है।\nकुल राशि: ₹1,499\nपिन कोड 560103 पर "
           "डिलीवरी 28 नवंबर तक।\nग्राहक सेवा: 1800 208 9898\n",
           modelled_on="Flipkart"),
    # --- Arabic: Careem ----------------------------------------------------------------------
    Sample("ar-careem-verification", "رمز التحقق الخاص بك",
           "مرحباً،\n\nرمز التحقق الخاص بك هو: 750318\n\nهذا الرمز صالح لمدة 10 دقائق. لا "
           "تشاركه مع أي شخص.\n\nفريق كريم\n",
           codes=("750318",), modelled_on="Careem"),
    Sample("ar-careem-receipt-negative", "إيصال رحلتك",
           "شكراً لركوبك مع كريم.\nرقم الرحلة: 82910473\nالمبلغ: 45.50 درهم\nالتاريخ: "
           "24/11/2026\nللاستفسار: 800 227 3648\n",
           modelled_on="Careem"),
    # --- Vietnamese: Zalo --------------------------------------------------------------------
    Sample("vi-zalo-verification", "Mã xác minh Zalo",
           "Xin chào,\n\nMã xác minh của bạn là 304819. Mã có hiệu lực trong 5 phút.\n\nVui lòng "
           "không chia sẻ mã này với bất kỳ ai.\n",
           codes=("304819",), modelled_on="Zalo"),
    Sample("vi-zalo-order-negative", "Xác nhận đơn hàng",
           "Cảm ơn bạn đã mua hàng.\nMã đơn hàng: 26112400817\nTổng tiền: 1.250.000 ₫\n"
           "Ngày đặt: 24/11/2026\nHotline: 1900 561 558\n",
           modelled_on="Zalo"),
    # --- Indonesian: Tokopedia ---------------------------------------------------------------
    Sample("id-tokopedia-otp", "Kode Verifikasi Tokopedia",
           None,
           """<table width="100%">
      <tr>
        <td>
          <p>
            Halo Budi,
          </p>
          <p>
            Masukkan kode verifikasi berikut untuk masuk ke akun Tokopedia kamu:
          </p>
        </td>
      </tr>
      <tr>
        <td align="center">
          <div style="font-size: 28px; letter-spacing: 6px;">
            829310
          </div>
        </td>
      </tr>
      <tr>
        <td>
          <p>
            Kode berlaku selama 5 menit. Jangan berikan kode ini kepada siapa pun,
            termasuk pihak yang mengaku dari Tokopedia.
          </p>
        </td>
      </tr>
    </table>
""",
           codes=("829310",), modelled_on="Tokopedia"),
    Sample("id-tokopedia-promo-negative", "Promo spesial untukmu",
           "Belanja hemat hari ini! Pakai kode promo HEMAT50 untuk potongan Rp50.000.\n"
           "Kode pos pengiriman: 12190\nBerlaku hingga 30 November 2026.\n",
           modelled_on="Tokopedia"),
    # --- Thai: LINE --------------------------------------------------------------------------
    Sample("th-line-verification", "รหัสยืนยันสำหรับ LINE",
           "รหัสยืนยันของคุณคือ 618204\n\nโปรดป้อนรหัสนี้ภายใน 10 นาที อย่าแจ้งรหัสนี้แก่ผู้อื่น\n",
           codes=("618204",), modelled_on="LINE"),
    Sample("ja-line-login", "LINEログインの確認",
           None,
           "<p>LINEアカウントへのログインを確認するため、以下の認証番号を入力してください。</p>"
           "<p style=\"font-size:24px\">4821</p>"
           "<p>心当たりがない場合は、このメールを破棄してください。</p>",
           codes=("4821",), modelled_on="LINE"),
    # --- Portuguese and Spanish: Mercado Libre --------------------------------------------------
    Sample("pt-mercadolivre-code", "Seu código de segurança",
           None,
           """<table width="100%">
  <tr>
    <td style="padding: 16px;">
      <p>
        Olá, Mariana!
      </p>
      <p>
        Para continuar, digite o código de segurança abaixo no Mercado Livre.
        Ele é válido por 15 minutos e só pode ser usado uma vez.
        Se você não pediu este código, recomendamos que altere sua senha.
      </p>
    </td>
  </tr>
  <tr>
    <td style="padding: 16px; text-align: center;">
      <span style="font-size: 32px;">
        519 284
      </span>
    </td>
  </tr>
</table>
""",
           codes=("519284",), modelled_on="Mercado Libre"),
    Sample("es-mercadolibre-purchase-negative", "¡Compraste!",
           "Compra #2000004829173\nTotal: $ 12.499\nLlega el jueves 26 de noviembre a "
           "Av. Corrientes 1368, C1043 CABA.\nCódigo postal: 1043\n",
           modelled_on="Mercado Libre"),
    # --- Polish: Allegro --------------------------------------------------------------------
    Sample("pl-allegro-login-code", "Kod weryfikacyjny",
           "Cześć,\n\nTwój kod weryfikacyjny to: 743019\n\nKod jest ważny przez 15 minut.\n",
           codes=("743019",), modelled_on="Allegro"),
    # --- Swedish: Samsung account ----------------------------------------------------------------
    Sample("sv-samsung-verification", "Samsung-konto: verifieringskod",
           "Hej,\n\nAnvänd den här verifieringskoden för att logga in på ditt Samsung-konto:\n\n"
           "208463\n\nKoden gäller i 10 minuter.\n",
           codes=("208463",), modelled_on="Samsung Account"),
    # --- Appwrite and FusionAuth: a link written as text in an HTML-only part ------------------
    Sample("fr-appwrite-magic-url", "Connexion à Atelier",
           None,
           "<p>Bonjour,</p>\n<p>Suivez ce lien pour vous connecter à Atelier :</p>\n"
           "<p>https://cloud.atelier.example/v1/account/sessions/magic-url?userId=6742f1a9&amp;"
           "secret=b71c0e93d4a2</p>\n<p>Si vous n'avez pas demandé à vous connecter, ignorez "
           "ce message.</p>",
           links=(("https://cloud.atelier.example/v1/account/sessions/magic-url?userId=6742f1a9&"
                   "secret=b71c0e93d4a2", ""),),
           modelled_on="Appwrite"),
    Sample("en-fusionauth-passwordless", "Log in to Pinecrest",
           None,
           "<p>Hi,</p><p>You can log in to Pinecrest by clicking the button below, or copy "
           "this address into your browser: https://login.pinecrest.example/oauth2/passwordless/"
           "Yq3oWm8nKx2Lz5Rt</p><p><a href=\"https://login.pinecrest.example/oauth2/passwordless"
           "/Yq3oWm8nKx2Lz5Rt\">Log in</a></p><p>This link expires in 3 minutes.</p>",
           links=(("https://login.pinecrest.example/oauth2/passwordless/Yq3oWm8nKx2Lz5Rt",
                   "Log in"),),
           modelled_on="FusionAuth"),
    # --- WorkOS AuthKit and Hanko: deeply nested layouts (MJML-style output) -------------------
    Sample("en-workos-magic-auth", "Your Meridian sign-in code",
           None,
           """<div style="background: #f6f6f6;">
  <table role="presentation" width="100%">
    <tbody>
      <tr>
        <td>
          <div style="max-width: 480px; margin: 0 auto;">
            <table role="presentation" width="100%">
              <tbody>
                <tr>
                  <td style="padding: 32px;">
                    <div style="font-size: 16px; line-height: 24px;">
                      Enter this code to sign in to Meridian. It expires in 10 minutes and can
                      only be used once. If you did not try to sign in, someone may have typed
                      your e-mail address by mistake, and you can safely ignore this e-mail.
                    </div>
                  </td>
                </tr>
                <tr>
                  <td style="padding: 0 32px 32px;">
                    <div style="font-family: monospace; font-size: 32px; letter-spacing: 8px;">
                      284617
                    </div>
                  </td>
                </tr>
              </tbody>
            </table>
          </div>
        </td>
      </tr>
    </tbody>
  </table>
</div>
""",
           codes=("284617",), modelled_on="WorkOS AuthKit"),
    Sample("de-hanko-passcode", "Dein Passcode für Ahornblatt",
           None,
           """<table width="100%">
            <tr>
                <td>
                    <h1>
                        Anmelden bei Ahornblatt
                    </h1>
                    <p>
                        Gib den folgenden Passcode auf der Anmeldeseite ein. Er ist 5 Minuten
                        lang gültig und kann nur einmal verwendet werden; fordere danach einfach
                        einen neuen an.
                    </p>
                </td>
            </tr>
            <tr>
                <td>
                    <p style="font-size: 28px; font-weight: bold;">
                        193825
                    </p>
                </td>
            </tr>
        </table>
""",
           codes=("193825",), modelled_on="Hanko"),
)
