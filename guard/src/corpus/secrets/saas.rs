//! Values of the payment, messaging and SaaS rules, in their vendors' formats.

use rand::Rng;

use super::super::{chars, ALNUM, BASE64URL, HEX};
use super::util::{
    alnum, b64url, base64, base64url, bytes, digits, hex, len, lower, pick, prefixed, url_encode,
    uuid, v, Prefixed, LOWER_ALNUM, UPPER_ALNUM, V,
};

/// The rules whose value is a fixed prefix and a run of one charset: `(rule id, prefix,
/// charset, length, names)`.
#[rustfmt::skip]
const PREFIXED: &[Prefixed] = &[
    ("square-access-token", "EAAA", BASE64URL, 60, &["SQUARE_ACCESS_TOKEN", "square_token"]),
    ("square-legacy-access-token", "sq0atp-", BASE64URL, 22, &["SQUARE_ACCESS_TOKEN"]),
    ("square-oauth-secret", "sq0csp-", BASE64URL, 43, &["SQUARE_APPLICATION_SECRET"]),
    ("paypal-client-secret", "E", BASE64URL, 79, &["PAYPAL_CLIENT_SECRET", "paypal_secret"]),
    ("shopify-access-token", "shpat_", HEX, 32, &["SHOPIFY_ACCESS_TOKEN"]),
    ("shopify-custom-app-token", "shpca_", HEX, 32, &["SHOPIFY_ACCESS_TOKEN"]),
    ("shopify-private-app-token", "shppa_", HEX, 32, &["SHOPIFY_PASSWORD"]),
    ("shopify-shared-secret", "shpss_", HEX, 32, &["SHOPIFY_API_SECRET"]),
    ("razorpay-key-secret", "", ALNUM, 24, &["RAZORPAY_KEY_SECRET", "razorpay_secret"]),
    ("plaid-secret", "", HEX, 30, &["PLAID_SECRET"]),
    ("woocommerce-consumer-secret", "cs_", HEX, 40,
        &["WOOCOMMERCE_CONSUMER_SECRET", "WC_CONSUMER_SECRET"]),
    ("slack-refresh-token", "xoxe-1-", ALNUM, 146, &["SLACK_REFRESH_TOKEN"]),
    ("twilio-api-key", "SK", HEX, 32, &["TWILIO_API_KEY"]),
    ("twilio-auth-token", "", HEX, 32,
        &["TWILIO_AUTH_TOKEN", "TWILIO_API_SECRET", "twilioAuthToken"]),
    ("mailgun-api-key", "key-", HEX, 32, &["MAILGUN_API_KEY"]),
    ("linear-api-key", "lin_api_", ALNUM, 40, &["LINEAR_API_KEY"]),
    ("linear-oauth-token", "lin_oauth_", HEX, 64, &["LINEAR_ACCESS_TOKEN"]),
    ("notion-legacy-token", "secret_", ALNUM, 43, &["NOTION_TOKEN"]),
    ("airtable-api-key", "key", ALNUM, 14, &["AIRTABLE_API_KEY"]),
    ("figma-pat", "figd_", BASE64URL, 40, &["FIGMA_TOKEN"]),
    ("okta-api-token", "00", BASE64URL, 40, &["OKTA_API_TOKEN", "okta_token"]),
    ("sentry-user-token", "sntryu_", HEX, 64, &["SENTRY_AUTH_TOKEN"]),
    ("datadog-api-key", "", HEX, 32, &["DD_API_KEY", "DATADOG_API_KEY"]),
    ("datadog-app-key", "", HEX, 40, &["DD_APP_KEY", "DATADOG_APP_KEY", "DD_APPLICATION_KEY"]),
    ("newrelic-user-api-key", "NRAK-", UPPER_ALNUM, 27, &["NEW_RELIC_API_KEY"]),
    ("newrelic-insert-key", "NRII-", BASE64URL, 32, &["NEW_RELIC_INSERT_KEY"]),
    ("algolia-admin-key", "", HEX, 32, &["ALGOLIA_ADMIN_KEY", "ALGOLIA_API_KEY"]),
    ("contentful-pat", "CFPAT-", BASE64URL, 43, &["CONTENTFUL_MANAGEMENT_TOKEN"]),
    ("contentful-delivery-token", "", BASE64URL, 43,
        &["CONTENTFUL_ACCESS_TOKEN", "CONTENTFUL_DELIVERY_TOKEN"]),
    ("facebook-app-secret", "", HEX, 32,
        &["FACEBOOK_APP_SECRET", "FB_APP_SECRET", "fb_client_secret"]),
    ("zendesk-api-token", "", ALNUM, 40, &["ZENDESK_API_TOKEN"]),
    ("rollbar-access-token", "", HEX, 32, &["ROLLBAR_ACCESS_TOKEN"]),
    ("bugsnag-api-key", "", HEX, 32, &["BUGSNAG_API_KEY"]),
    ("fastly-api-token", "", BASE64URL, 32, &["FASTLY_API_TOKEN", "FASTLY_API_KEY"]),
    ("frameio-api-token", "fio-u-", BASE64URL, 64, &["FRAMEIO_TOKEN"]),
    ("adafruit-io-key", "aio_", ALNUM, 28, &["ADAFRUIT_IO_KEY"]),
    ("ubidots-token", "BBFF-", ALNUM, 30, &["UBIDOTS_TOKEN"]),
    ("scalingo-api-token", "tk-us-", BASE64URL, 48, &["SCALINGO_API_TOKEN"]),
];

/// The value of rule `id`, or `None` when `id` is not one of this module's.
pub(super) fn make<R: Rng + ?Sized>(rng: &mut R, id: &str) -> Option<V> {
    if let Some(value) = prefixed(rng, PREFIXED, id) {
        return Some(value);
    }
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
        "braintree-access-token" => {
            let env = pick(r, &["production", "sandbox"]);
            let value = format!(
                "access_token${env}${}${}",
                chars(r, LOWER_ALNUM, 16),
                hex(r, 32)
            );
            v(value, r, &["BRAINTREE_ACCESS_TOKEN"])
        }
        "razorpay-key-id" => {
            let mode = pick(r, &["live", "test"]);
            v(
                format!("rzp_{mode}_{}", alnum(r, 14)),
                r,
                &["RAZORPAY_KEY_ID"],
            )
        }
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
        "sendgrid-api-key" => v(
            format!("SG.{}.{}", b64url(r, 22), b64url(r, 43)),
            r,
            &["SENDGRID_API_KEY"],
        ),
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
        "notion-token" => v(
            format!("ntn_{}{}", digits(r, 11), alnum(r, 35)),
            r,
            &["NOTION_TOKEN", "NOTION_API_KEY"],
        ),
        "airtable-pat" => v(
            format!("pat{}.{}", alnum(r, 14), hex(r, 64)),
            r,
            &["AIRTABLE_TOKEN"],
        ),
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
        "mapbox-secret-token" => {
            let json = format!(
                r#"{{"u":"{}","a":"{}"}}"#,
                lower(r, 8),
                chars(r, LOWER_ALNUM, 25)
            );
            let value = format!("sk.{}.{}", base64url(json.as_bytes()), b64url(r, 22));
            v(value, r, &["MAPBOX_SECRET_TOKEN", "MAPBOX_DOWNLOADS_TOKEN"])
        }
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
        "stackhawk-api-key" => v(
            format!("hawk.{}.{}", alnum(r, 20), alnum(r, 20)),
            r,
            &["HAWK_API_KEY"],
        ),
        _ => return None,
    })
}
