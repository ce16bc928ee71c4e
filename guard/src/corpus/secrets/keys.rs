//! Values of the private-key, bearer-credential, URL/connection-string and generic rules.

use rand::Rng;

use super::super::{chars, ALNUM};
use super::blocks::{escaped_pem, pem, putty, Pem};
use super::util::{
    alnum, b64url, base64, base64url, bytes, digits, hex, len, lower, pick, raw, v, V,
};

/// Characters a password can hold in a URL's userinfo without percent-encoding (RFC 3986
/// unreserved and some sub-delims; `$` left out: `$NAME` reads as a variable).
const URL_PASSWORD: &str =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!*+=,";
/// Characters of a password in a `key=value;` connection string (no `;`, quotes or spaces).
const CONN_PASSWORD: &str =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#%^*-_+=.~@";
/// Characters of a password in a URL query (no `&`, `#`, `;`).
const QUERY_PASSWORD: &str =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!*+";
/// Characters of a password typed in code or configuration.
const PASSWORD: &str =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!@#%^&*-_+=~?";
/// Characters of an opaque API token.
const TOKEN: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// A password of `lo..=hi` characters from `set`, starting and ending with a letter or digit.
pub(super) fn password<R: Rng + ?Sized>(r: &mut R, set: &str, lo: usize, hi: usize) -> String {
    let n = len(r, lo, hi);
    format!("{}{}{}", alnum(r, 1), chars(r, set, n - 2), alnum(r, 1))
}

/// `s` with `extra` inserted at a random inner position.
fn insert<R: Rng + ?Sized>(r: &mut R, s: &str, extra: &str) -> String {
    let at = len(r, 1, s.len() - 1);
    format!("{}{extra}{}", &s[..at], &s[at..])
}

/// The value of rule `id`, or `None` when `id` is not one of this module's.
pub(super) fn make<R: Rng + ?Sized>(rng: &mut R, id: &str) -> Option<V> {
    let r = rng;
    Some(match id {
        "gcp-service-account-private-key" => {
            let key = escaped_pem(r);
            v(key, r, &["private_key"])
        }
        "kubeconfig-client-key-data" => {
            let kind = if r.random_bool(0.5) {
                Pem::Rsa
            } else {
                Pem::Ec
            };
            let key = pem(r, kind);
            v(
                base64(format!("{key}\n").as_bytes()),
                r,
                &["client-key-data"],
            )
        }
        "azure-sas-token" => v(
            super::util::url_encode(&base64(&bytes(r, 32))),
            r,
            &["AZURE_STORAGE_SAS_TOKEN"],
        ),
        "npmrc-auth-token" => {
            let n = len(r, 18, 27);
            v(base64(&bytes(r, n)), r, &["_authToken", "_auth"])
        }
        "rsa-private-key" => raw("id_rsa", pem(r, Pem::Rsa)),
        "ec-private-key" => raw("ec_key.pem", pem(r, Pem::Ec)),
        "dsa-private-key" => raw("id_dsa", pem(r, Pem::Dsa)),
        "openssh-private-key" => raw("id_ed25519", pem(r, Pem::OpenSsh)),
        "pkcs8-private-key" => raw("private_key.pem", pem(r, Pem::Pkcs8)),
        "encrypted-private-key" => raw("key.enc.pem", pem(r, Pem::Encrypted)),
        "pgp-private-key-block" => raw("secret.asc", pem(r, Pem::Pgp)),
        "putty-private-key" => raw("id_rsa.ppk", putty(r)),
        "jwt" => {
            let header = if r.random_bool(0.5) {
                r#"{"alg":"HS256","typ":"JWT"}"#.to_string()
            } else {
                format!(r#"{{"alg":"ES256","kid":"{}","typ":"JWT"}}"#, hex(r, 16))
            };
            let payload = format!(
                r#"{{"sub":"{}","name":"{}","iat":17{},"exp":17{}}}"#,
                digits(r, 10),
                lower(r, 8),
                digits(r, 8),
                digits(r, 8)
            );
            let sig = b64url(r, if header.contains("HS256") { 43 } else { 86 });
            let value = format!(
                "{}.{}.{sig}",
                base64url(header.as_bytes()),
                base64url(payload.as_bytes())
            );
            v(
                value,
                r,
                &["ACCESS_TOKEN", "id_token", "SUPABASE_SERVICE_ROLE_KEY"],
            )
        }
        "basic-auth-header" | "docker-config-auth" => {
            let user = pick(r, &["deploy", "ci-bot", "jenkins", "svc_reports", "alice"]);
            let credential = format!("{user}:{}", password(r, PASSWORD, 12, 20));
            v(base64(credential.as_bytes()), r, &["Authorization"])
        }
        "bearer-token" => {
            let n = len(r, 32, 64);
            v(chars(r, TOKEN, n), r, &["Authorization"])
        }
        "url-password" => v(
            password(r, URL_PASSWORD, 12, 24),
            r,
            &["DATABASE_URL", "REDIS_URL", "BROKER_URL"],
        ),
        "connection-string-password" => v(
            password(r, CONN_PASSWORD, 12, 20),
            r,
            &["ConnectionStrings__Default", "DB_CONNECTION"],
        ),
        "url-query-password" => v(
            password(r, QUERY_PASSWORD, 12, 20),
            r,
            &["JDBC_URL", "LOGIN_URL"],
        ),
        "jdbc-oracle-password" => v(
            password(
                r,
                "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789-_#!",
                12,
                20,
            ),
            r,
            &["ORACLE_JDBC_URL"],
        ),
        "curl-user-password" => v(
            password(
                r,
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_!.%+=",
                12,
                20,
            ),
            r,
            &["CURL_USER"],
        ),
        "generic-password" => {
            let names = [
                "DB_PASSWORD",
                "admin_password",
                "smtpPassword",
                "MYSQL_ROOT_PASSWORD",
                "passwd",
                "mail_pass",
                "KEYSTORE_PASSPHRASE",
                "ldap.bind.pwd",
            ];
            // As password policies ask: at least one digit and one symbol.
            let base = password(r, PASSWORD, 14, 22);
            let digit = digits(r, 1);
            let symbol = chars(r, "!@#%^&*-_+=~?", 1);
            let with_digit = insert(r, &base, &digit);
            let value = insert(r, &with_digit, &symbol);
            v(value, r, &names)
        }
        "generic-api-key" => {
            let names = [
                "API_KEY",
                "client_secret",
                "authToken",
                "SERVICE_TOKEN",
                "webhook_secret",
                "ACCESS_KEY",
                "apiKey",
                "app_secret",
                "INTERNAL_API_TOKEN",
                "credentials",
            ];
            let n = len(r, 28, 48);
            let base = format!(
                "{}{}",
                alnum(r, 1),
                chars(r, &format!("{ALNUM}-_+/="), n - 1)
            );
            let digit = digits(r, 1);
            let value = insert(r, &base, &digit);
            v(value, r, &names)
        }
        _ => return None,
    })
}
