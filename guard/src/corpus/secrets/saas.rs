//! Values of the payment, messaging and SaaS rules, in their vendors' formats.

use rand::Rng;

use super::super::chars;
use super::util::{
    alnum, b64url, base64, base64url, bytes, digits, hex, len, lower, pick, url_encode, uuid, v,
    LOWER_ALNUM, UPPER_ALNUM, V,
};

/// The value of rule `id`, or `None` when `id` is not one of this module's.
pub(super) fn make<R: Rng + ?Sized>(rng: &mut R, id: &str) -> Option<V> {
    let r = rng;
    Some(match id {
        "stripe-live-secret-key" | "stripe-test-secret-key" => {
            let mode = if id == "stripe-live-secret-key" {
                "live"
            } else {
                "test"
            };
            let n = if r.random_bool(0.5) { 24 } else { 99 };
            v(
                format!("sk_{mode}_{}", alnum(r, n)),
                r,
                &["STRIPE_SECRET_KEY", "stripe_api_key"],
            )
        }
        "stripe-restricted-key" => {
            let mode = pick(r, &["live", "test"]);
            v(
                format!("rk_{mode}_{}", alnum(r, 99)),
                r,
                &["STRIPE_RESTRICTED_KEY"],
            )
        }
        "stripe-webhook-secret" => {
            let body = if r.random_bool(0.5) {
                alnum(r, 32)
            } else {
                base64(&bytes(r, 24))
            };
            v(
                format!("whsec_{body}"),
                r,
                &["STRIPE_WEBHOOK_SECRET", "SVIX_SECRET"],
            )
        }
        "square-access-token" => v(
            format!("EAAA{}", b64url(r, 60)),
            r,
            &["SQUARE_ACCESS_TOKEN", "square_token"],
        ),
        "square-legacy-access-token" => v(
            format!("sq0atp-{}", b64url(r, 22)),
            r,
            &["SQUARE_ACCESS_TOKEN"],
        ),
        "square-oauth-secret" => v(
            format!("sq0csp-{}", b64url(r, 43)),
            r,
            &["SQUARE_APPLICATION_SECRET"],
        ),
        "braintree-access-token" => {
            let env = pick(r, &["production", "sandbox"]);
            let value = format!(
                "access_token${env}${}${}",
                chars(r, LOWER_ALNUM, 16),
                hex(r, 32)
            );
            v(value, r, &["BRAINTREE_ACCESS_TOKEN"])
        }
        "paypal-client-secret" => v(
            format!("E{}", b64url(r, 79)),
            r,
            &["PAYPAL_CLIENT_SECRET", "paypal_secret"],
        ),
        "shopify-access-token" => v(
            format!("shpat_{}", hex(r, 32)),
            r,
            &["SHOPIFY_ACCESS_TOKEN"],
        ),
        "shopify-custom-app-token" => v(
            format!("shpca_{}", hex(r, 32)),
            r,
            &["SHOPIFY_ACCESS_TOKEN"],
        ),
        "shopify-private-app-token" => v(format!("shppa_{}", hex(r, 32)), r, &["SHOPIFY_PASSWORD"]),
        "shopify-shared-secret" => v(format!("shpss_{}", hex(r, 32)), r, &["SHOPIFY_API_SECRET"]),
        "razorpay-key-id" => {
            let mode = pick(r, &["live", "test"]);
            v(
                format!("rzp_{mode}_{}", alnum(r, 14)),
                r,
                &["RAZORPAY_KEY_ID"],
            )
        }
        "razorpay-key-secret" => v(alnum(r, 24), r, &["RAZORPAY_KEY_SECRET", "razorpay_secret"]),
        "flutterwave-secret-key" => {
            let test = pick(r, &["", "_TEST"]);
            v(
                format!("FLWSECK{test}-{}-X", hex(r, 32)),
                r,
                &["FLW_SECRET_KEY"],
            )
        }
        "flutterwave-encryption-key" => {
            let test = pick(r, &["", "_TEST"]);
            v(
                format!("FLWSECK{test}{}", hex(r, 12)),
                r,
                &["FLW_ENCRYPTION_KEY"],
            )
        }
        "plaid-access-token" => {
            let env = pick(r, &["sandbox", "development", "production"]);
            let value = format!("access-{env}-{}", uuid(r));
            v(value, r, &["PLAID_ACCESS_TOKEN"])
        }
        "plaid-secret" => v(hex(r, 30), r, &["PLAID_SECRET"]),
        "shippo-api-token" => {
            let mode = pick(r, &["live", "test"]);
            v(
                format!("shippo_{mode}_{}", hex(r, 40)),
                r,
                &["SHIPPO_API_KEY"],
            )
        }
        "easypost-api-key" => {
            let prefix = pick(r, &["EZAK", "EZTK"]);
            v(
                format!("{prefix}{}", alnum(r, 54)),
                r,
                &["EASYPOST_API_KEY"],
            )
        }
        "gocardless-access-token" => {
            let env = pick(r, &["live", "sandbox"]);
            v(
                format!("{env}_{}", b64url(r, 40)),
                r,
                &["GOCARDLESS_ACCESS_TOKEN"],
            )
        }
        "woocommerce-consumer-secret" => v(
            format!("cs_{}", hex(r, 40)),
            r,
            &["WOOCOMMERCE_CONSUMER_SECRET", "WC_CONSUMER_SECRET"],
        ),
        "slack-bot-token" => {
            let n = len(r, 10, 13);
            let value = format!("xoxb-{}-{}-{}", digits(r, n), digits(r, 13), alnum(r, 24));
            v(value, r, &["SLACK_BOT_TOKEN"])
        }
        "slack-user-token" => {
            let value = format!(
                "xoxp-{}-{}-{}-{}",
                digits(r, 11),
                digits(r, 12),
                digits(r, 13),
                hex(r, 32)
            );
            v(value, r, &["SLACK_USER_TOKEN"])
        }
        "slack-app-token" => {
            let value = format!(
                "xapp-1-A{}-{}-{}",
                chars(r, UPPER_ALNUM, 10),
                digits(r, 13),
                hex(r, 64)
            );
            v(value, r, &["SLACK_APP_TOKEN"])
        }
        "slack-config-token" => {
            let kind = pick(r, &["b", "p"]);
            v(
                format!("xoxe.xox{kind}-1-{}", alnum(r, 163)),
                r,
                &["SLACK_CONFIG_TOKEN"],
            )
        }
        "slack-refresh-token" => v(
            format!("xoxe-1-{}", alnum(r, 146)),
            r,
            &["SLACK_REFRESH_TOKEN"],
        ),
        "slack-legacy-token" => {
            let kind = pick(r, &["a", "o", "r", "s"]);
            let value = format!(
                "xox{kind}-{}-{}-{}-{}",
                digits(r, 11),
                digits(r, 11),
                digits(r, 12),
                hex(r, 64)
            );
            v(value, r, &["SLACK_LEGACY_TOKEN", "SLACK_API_TOKEN"])
        }
        "slack-webhook-url" => {
            let (a, b) = (len(r, 8, 10), len(r, 8, 10));
            let value = format!(
                "https://hooks.slack.com/services/T{}/B{}/{}",
                chars(r, UPPER_ALNUM, a),
                chars(r, UPPER_ALNUM, b),
                alnum(r, 24)
            );
            v(value, r, &["SLACK_WEBHOOK_URL"])
        }
        "discord-bot-token" => {
            // Base64 of the bot's user id (a snowflake, starting with 1), timestamp, HMAC.
            let n = len(r, 18, 19);
            let id = format!("1{}", chars(r, "0123456789", n - 1));
            let value = format!(
                "{}.{}.{}",
                base64url(id.as_bytes()),
                b64url(r, 6),
                b64url(r, 38)
            );
            v(value, r, &["DISCORD_BOT_TOKEN", "DISCORD_TOKEN"])
        }
        "discord-webhook-url" => {
            let n = len(r, 18, 19);
            let value = format!(
                "https://discord.com/api/webhooks/{}/{}",
                digits(r, n),
                b64url(r, 68)
            );
            v(value, r, &["DISCORD_WEBHOOK_URL"])
        }
        "telegram-bot-token" => {
            let n = len(r, 8, 10);
            let value = format!("{}:AA{}", digits(r, n), b64url(r, 33));
            v(value, r, &["TELEGRAM_BOT_TOKEN", "telegram_token"])
        }
        "twilio-api-key" => v(format!("SK{}", hex(r, 32)), r, &["TWILIO_API_KEY"]),
        "twilio-auth-token" => v(
            hex(r, 32),
            r,
            &["TWILIO_AUTH_TOKEN", "TWILIO_API_SECRET", "twilioAuthToken"],
        ),
        "sendgrid-api-key" => v(
            format!("SG.{}.{}", b64url(r, 22), b64url(r, 43)),
            r,
            &["SENDGRID_API_KEY"],
        ),
        "mailgun-api-key" => v(format!("key-{}", hex(r, 32)), r, &["MAILGUN_API_KEY"]),
        "mailgun-private-key" => {
            let value = format!("{}-{}-{}", hex(r, 32), hex(r, 8), hex(r, 8));
            v(
                value,
                r,
                &["MAILGUN_API_KEY", "MAILGUN_WEBHOOK_SIGNING_KEY"],
            )
        }
        "mailchimp-api-key" => {
            let dc = len(r, 1, 21);
            v(format!("{}-us{dc}", hex(r, 32)), r, &["MAILCHIMP_API_KEY"])
        }
        "postmark-server-token" => {
            let value = uuid(r);
            v(value, r, &["POSTMARK_SERVER_TOKEN", "POSTMARK_API_TOKEN"])
        }
        "brevo-api-key" => {
            let value = format!("xkeysib-{}-{}", hex(r, 64), alnum(r, 16));
            v(value, r, &["BREVO_API_KEY", "SENDINBLUE_API_KEY"])
        }
        "hubspot-private-app-token" => {
            let region = pick(r, &["na1", "eu1", "na2"]);
            let value = format!("pat-{region}-{}", uuid(r));
            v(value, r, &["HUBSPOT_ACCESS_TOKEN"])
        }
        "hubspot-api-key" => {
            let value = uuid(r);
            v(value, r, &["HUBSPOT_API_KEY", "hapikey"])
        }
        "linear-api-key" => v(format!("lin_api_{}", alnum(r, 40)), r, &["LINEAR_API_KEY"]),
        "linear-oauth-token" => v(
            format!("lin_oauth_{}", hex(r, 64)),
            r,
            &["LINEAR_ACCESS_TOKEN"],
        ),
        "notion-token" => v(
            format!("ntn_{}{}", digits(r, 11), alnum(r, 35)),
            r,
            &["NOTION_TOKEN", "NOTION_API_KEY"],
        ),
        "notion-legacy-token" => v(format!("secret_{}", alnum(r, 43)), r, &["NOTION_TOKEN"]),
        "airtable-pat" => v(
            format!("pat{}.{}", alnum(r, 14), hex(r, 64)),
            r,
            &["AIRTABLE_TOKEN"],
        ),
        "airtable-api-key" => v(format!("key{}", alnum(r, 14)), r, &["AIRTABLE_API_KEY"]),
        "figma-pat" => v(format!("figd_{}", b64url(r, 40)), r, &["FIGMA_TOKEN"]),
        "dropbox-short-lived-token" => {
            let head = pick(r, &["B", "u.A"]);
            let n = len(r, 135, 140);
            v(
                format!("sl.{head}{}", b64url(r, n)),
                r,
                &["DROPBOX_ACCESS_TOKEN"],
            )
        }
        "dropbox-long-lived-token" => {
            let value = format!("{}AAAAAAAAAA{}", alnum(r, 11), b64url(r, 43));
            v(value, r, &["DROPBOX_ACCESS_TOKEN", "dropbox_token"])
        }
        "okta-api-token" => v(
            format!("00{}", b64url(r, 40)),
            r,
            &["OKTA_API_TOKEN", "okta_token"],
        ),
        "sentry-org-token" => {
            let json = format!(
                r#"{{"iat":{},"url":"https://sentry.io","region_url":"https://us.sentry.io","org":"{}"}}"#,
                digits(r, 10),
                lower(r, 8)
            );
            let secret = chars(
                r,
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
                43,
            );
            v(
                format!("sntrys_{}_{secret}", base64(json.as_bytes())),
                r,
                &["SENTRY_AUTH_TOKEN"],
            )
        }
        "sentry-user-token" => v(format!("sntryu_{}", hex(r, 64)), r, &["SENTRY_AUTH_TOKEN"]),
        "datadog-api-key" => v(hex(r, 32), r, &["DD_API_KEY", "DATADOG_API_KEY"]),
        "datadog-app-key" => v(
            hex(r, 40),
            r,
            &["DD_APP_KEY", "DATADOG_APP_KEY", "DD_APPLICATION_KEY"],
        ),
        "newrelic-user-api-key" => v(
            format!("NRAK-{}", chars(r, UPPER_ALNUM, 27)),
            r,
            &["NEW_RELIC_API_KEY"],
        ),
        "newrelic-insert-key" => v(
            format!("NRII-{}", b64url(r, 32)),
            r,
            &["NEW_RELIC_INSERT_KEY"],
        ),
        "newrelic-license-key" => {
            let value = if r.random_bool(0.7) {
                format!("{}NRAL", hex(r, 36))
            } else {
                format!("eu01xx{}NRAL", hex(r, 30))
            };
            v(value, r, &["NEW_RELIC_LICENSE_KEY"])
        }
        "grafana-cloud-api-token" => {
            let json = format!(
                r#"{{"o":"{}","n":"stack-{}-hm-read","k":"{}","m":{{"r":"prod-us-east-0"}}}}"#,
                digits(r, 6),
                digits(r, 6),
                alnum(r, 24)
            );
            v(
                format!("glc_{}", base64(json.as_bytes())),
                r,
                &["GRAFANA_CLOUD_TOKEN"],
            )
        }
        "grafana-service-account-token" => {
            let value = format!("glsa_{}_{}", alnum(r, 32), hex(r, 8));
            v(
                value,
                r,
                &["GRAFANA_TOKEN", "GRAFANA_SERVICE_ACCOUNT_TOKEN"],
            )
        }
        "grafana-api-key" => {
            let json = format!(
                r#"{{"k":"{}","n":"{}","id":{}}}"#,
                alnum(r, 32),
                lower(r, 8),
                len(r, 1, 99)
            );
            v(base64(json.as_bytes()), r, &["GRAFANA_API_KEY"])
        }
        "pagerduty-api-key" => {
            let head = pick(r, &["u+", "y_", ""]);
            let body = chars(
                r,
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+-",
                20 - head.len(),
            );
            v(
                format!("{head}{body}"),
                r,
                &["PAGERDUTY_API_KEY", "PAGERDUTY_TOKEN"],
            )
        }
        "opsgenie-api-key" => {
            let value = uuid(r);
            v(value, r, &["OPSGENIE_API_KEY"])
        }
        "algolia-admin-key" => v(hex(r, 32), r, &["ALGOLIA_ADMIN_KEY", "ALGOLIA_API_KEY"]),
        "mapbox-secret-token" => {
            let json = format!(
                r#"{{"u":"{}","a":"{}"}}"#,
                lower(r, 8),
                chars(r, LOWER_ALNUM, 25)
            );
            let value = format!("sk.{}.{}", base64url(json.as_bytes()), b64url(r, 22));
            v(value, r, &["MAPBOX_SECRET_TOKEN", "MAPBOX_DOWNLOADS_TOKEN"])
        }
        "contentful-pat" => v(
            format!("CFPAT-{}", b64url(r, 43)),
            r,
            &["CONTENTFUL_MANAGEMENT_TOKEN"],
        ),
        "contentful-delivery-token" => v(
            b64url(r, 43),
            r,
            &["CONTENTFUL_ACCESS_TOKEN", "CONTENTFUL_DELIVERY_TOKEN"],
        ),
        "typeform-pat" => v(
            format!("tfp_{}_{}", b64url(r, 44), b64url(r, 14)),
            r,
            &["TYPEFORM_TOKEN"],
        ),
        "facebook-access-token" => {
            let n = len(r, 150, 200);
            let value = format!("EAA{}{}", pick(r, &["B", "G", "J", "C", "I"]), alnum(r, n));
            v(value, r, &["FACEBOOK_ACCESS_TOKEN", "FB_ACCESS_TOKEN"])
        }
        "facebook-app-secret" => v(
            hex(r, 32),
            r,
            &["FACEBOOK_APP_SECRET", "FB_APP_SECRET", "fb_client_secret"],
        ),
        "twitter-bearer-token" => {
            let tail = url_encode(&base64(&bytes(r, 60)));
            let value = format!("{}{}AAAAAAA{tail}", "A".repeat(21), alnum(r, 4));
            v(value, r, &["TWITTER_BEARER_TOKEN", "X_BEARER_TOKEN"])
        }
        "twitter-api-secret" => {
            let n = if r.random_bool(0.5) { 50 } else { 45 };
            let names = [
                "TWITTER_API_SECRET",
                "TWITTER_CONSUMER_SECRET",
                "TWITTER_ACCESS_TOKEN_SECRET",
            ];
            v(alnum(r, n), r, &names)
        }
        "twitter-access-token" => {
            let n = len(r, 18, 19);
            v(
                format!("{}-{}", digits(r, n), alnum(r, 31)),
                r,
                &["TWITTER_ACCESS_TOKEN"],
            )
        }
        "asana-pat" => {
            let value = if r.random_bool(0.5) {
                format!("1/{}:{}", digits(r, 16), hex(r, 32))
            } else {
                format!("2/{}/{}:{}", digits(r, 16), digits(r, 16), hex(r, 32))
            };
            v(value, r, &["ASANA_ACCESS_TOKEN", "ASANA_PAT"])
        }
        "clickup-api-token" => v(
            format!("pk_{}_{}", digits(r, 8), chars(r, UPPER_ALNUM, 32)),
            r,
            &["CLICKUP_API_TOKEN"],
        ),
        "zendesk-api-token" => v(alnum(r, 40), r, &["ZENDESK_API_TOKEN"]),
        "intercom-access-token" => {
            let plain = format!("tok:{}:1:0", uuid(r));
            v(base64(plain.as_bytes()), r, &["INTERCOM_ACCESS_TOKEN"])
        }
        "launchdarkly-sdk-key" => {
            let value = format!("sdk-{}", uuid(r));
            v(value, r, &["LAUNCHDARKLY_SDK_KEY", "LD_SDK_KEY"])
        }
        "launchdarkly-access-token" => {
            let value = format!("api-{}", uuid(r));
            v(value, r, &["LAUNCHDARKLY_ACCESS_TOKEN", "LD_API_KEY"])
        }
        "splunk-hec-token" => {
            let id = uuid(r);
            let value = if r.random_bool(0.5) {
                id.to_ascii_uppercase()
            } else {
                id
            };
            v(value, r, &["SPLUNK_HEC_TOKEN"])
        }
        "rollbar-access-token" => v(hex(r, 32), r, &["ROLLBAR_ACCESS_TOKEN"]),
        "bugsnag-api-key" => v(hex(r, 32), r, &["BUGSNAG_API_KEY"]),
        "fastly-api-token" => v(b64url(r, 32), r, &["FASTLY_API_TOKEN", "FASTLY_API_KEY"]),
        "ngrok-auth-token" => {
            let value = format!("{}{}_{}", digits(r, 1), alnum(r, 25), alnum(r, 21));
            v(value, r, &["NGROK_AUTHTOKEN", "NGROK_API_KEY"])
        }
        "duffel-api-token" => {
            let mode = pick(r, &["test", "live"]);
            v(
                format!("duffel_{mode}_{}", b64url(r, 43)),
                r,
                &["DUFFEL_ACCESS_TOKEN"],
            )
        }
        "frameio-api-token" => v(format!("fio-u-{}", b64url(r, 64)), r, &["FRAMEIO_TOKEN"]),
        "adafruit-io-key" => v(format!("aio_{}", alnum(r, 28)), r, &["ADAFRUIT_IO_KEY"]),
        "zapier-webhook-url" => {
            let value = format!(
                "https://hooks.zapier.com/hooks/catch/{}/{}/",
                digits(r, 7),
                chars(r, LOWER_ALNUM, 7)
            );
            v(value, r, &["ZAPIER_WEBHOOK_URL"])
        }
        "teams-webhook-url" => {
            let tenant = pick(r, &["contoso", "acme", "northwind"]);
            let value = format!(
                "https://{tenant}.webhook.office.com/webhookb2/{}@{}/IncomingWebhook/{}/{}",
                uuid(r),
                uuid(r),
                hex(r, 32),
                uuid(r)
            );
            v(value, r, &["TEAMS_WEBHOOK_URL"])
        }
        "ubidots-token" => v(format!("BBFF-{}", alnum(r, 30)), r, &["UBIDOTS_TOKEN"]),
        "scalingo-api-token" => v(
            format!("tk-us-{}", b64url(r, 48)),
            r,
            &["SCALINGO_API_TOKEN"],
        ),
        "stackhawk-api-key" => v(
            format!("hawk.{}.{}", alnum(r, 20), alnum(r, 20)),
            r,
            &["HAWK_API_KEY"],
        ),
        _ => return None,
    })
}
