//! Multi-line values (PEM blocks, PuTTY keys) and the texts that hold the values an assignment
//! cannot: credential files, connection strings, URLs, HTTP headers.

use rand::Rng;

use super::super::{embed, Planted};
use super::util::{base64, bytes, digits, hex, len, lower, pick, uuid, UPPER_HEX};

/// The kinds of PEM (and PGP armor) private key the generator writes.
#[derive(Clone, Copy)]
pub(super) enum Pem {
    Rsa,
    Ec,
    Dsa,
    OpenSsh,
    Pkcs8,
    Encrypted,
    Pgp,
}

/// `data` as base64 lines of `width` characters.
fn wrap(data: &[u8], width: usize) -> Vec<String> {
    let text = base64(data);
    text.as_bytes()
        .chunks(width)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect()
}

/// A random private key in armor: the right label, DER header and line width for its kind,
/// random bytes for the rest.
pub(super) fn pem<R: Rng + ?Sized>(r: &mut R, kind: Pem) -> String {
    let (label, mut der, width): (&str, Vec<u8>, usize) = match kind {
        Pem::Rsa => (
            "RSA PRIVATE KEY",
            vec![0x30, 0x82, 0x04, 0xa4, 2, 1, 0, 2, 0x82, 1, 1, 0],
            64,
        ),
        Pem::Ec => ("EC PRIVATE KEY", vec![0x30, 0x77, 2, 1, 1, 4, 0x20], 64),
        Pem::Dsa => (
            "DSA PRIVATE KEY",
            vec![0x30, 0x82, 0x01, 0xbb, 2, 1, 0, 2, 0x81, 0x81, 0],
            64,
        ),
        Pem::OpenSsh => {
            let mut d = b"openssh-key-v1\0\0\0\0\x04none\0\0\0\x04none\0\0\0\0\0\0\0\x01\0\0\0\x33\0\0\0\x0bssh-ed25519".to_vec();
            d.extend(bytes(r, 32));
            ("OPENSSH PRIVATE KEY", d, 70)
        }
        Pem::Pkcs8 => (
            "PRIVATE KEY",
            vec![
                0x30, 0x82, 0x04, 0xbe, 2, 1, 0, 0x30, 0x0d, 6, 9, 0x2a, 0x86, 0x48, 0x86, 0xf7,
                0x0d, 1, 1, 1, 5, 0, 4, 0x82, 0x04, 0xa8,
            ],
            64,
        ),
        Pem::Encrypted => (
            "ENCRYPTED PRIVATE KEY",
            vec![
                0x30, 0x82, 0x05, 0x1c, 0x30, 0x4e, 6, 9, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 5,
                0x0d, 0x30, 0x41,
            ],
            64,
        ),
        Pem::Pgp => ("PGP PRIVATE KEY BLOCK", vec![0x95, 0x03, 0xc6, 0x04], 64),
    };
    let body = match kind {
        Pem::Ec => 114,
        Pem::Dsa => len(r, 420, 440),
        Pem::OpenSsh => len(r, 200, 300),
        _ => len(r, 500, 1100),
    };
    der.extend(bytes(r, body));
    let eol = if r.random_bool(0.2) { "\r\n" } else { "\n" };
    let mut lines = vec![format!("-----BEGIN {label}-----")];
    match kind {
        Pem::Rsa if r.random_bool(0.3) => {
            lines.push("Proc-Type: 4,ENCRYPTED".to_string());
            lines.push(format!(
                "DEK-Info: AES-128-CBC,{}",
                super::super::chars(r, UPPER_HEX, 32)
            ));
            lines.push(String::new());
        }
        Pem::Pgp => {
            if r.random_bool(0.5) {
                lines.push("Comment: exported by ops".to_string());
            }
            lines.push(String::new());
        }
        _ => {}
    }
    lines.extend(wrap(&der, width));
    if let Pem::Pgp = kind {
        lines.push(format!("={}", base64(&bytes(r, 3))));
    }
    lines.push(format!("-----END {label}-----"));
    lines.join(eol)
}

/// A PKCS#8 key as a JSON string holds it: each line break written `\n`.
pub(super) fn escaped_pem<R: Rng + ?Sized>(r: &mut R) -> String {
    pem(r, Pem::Pkcs8)
        .replace("\r\n", "\n")
        .replace('\n', "\\n")
}

/// A random PuTTY private key file (PPK version 2 or 3, unencrypted).
pub(super) fn putty<R: Rng + ?Sized>(r: &mut R) -> String {
    let (version, algo, public, private, mac) = if r.random_bool(0.5) {
        (3, "ssh-ed25519", 51, 48, 64)
    } else {
        (2, "ssh-rsa", 279, 660, 40)
    };
    let public_lines = wrap(&bytes(r, public), 64);
    let private_lines = wrap(&bytes(r, private), 64);
    let mut out = vec![
        format!("PuTTY-User-Key-File-{version}: {algo}"),
        "Encryption: none".to_string(),
        format!(
            "Comment: {}-key-2026{}",
            if version == 3 { "eddsa" } else { "rsa" },
            digits(r, 4)
        ),
        format!("Public-Lines: {}", public_lines.len()),
    ];
    out.extend(public_lines);
    out.push(format!("Private-Lines: {}", private_lines.len()));
    out.extend(private_lines);
    out.push(format!("Private-MAC: {}", hex(r, mac)));
    out.join("\n")
}

/// A GCP service-account key file holding `key_id` and the escaped PEM `key`.
fn service_account(r: &mut (impl Rng + ?Sized), key_id: &str, key: &str) -> String {
    let project = format!("{}-{}", lower(r, 6), digits(r, 6));
    let account = lower(r, 8);
    format!(
        "{{\n  \"type\": \"service_account\",\n  \"project_id\": \"{project}\",\n  \"private_key_id\": \"{key_id}\",\n  \
         \"private_key\": \"{key}\\n\",\n  \"client_email\": \"{account}@{project}.iam.gserviceaccount.com\",\n  \
         \"client_id\": \"{}\",\n  \"auth_uri\": \"https://accounts.google.com/o/oauth2/auth\",\n  \
         \"token_uri\": \"https://oauth2.googleapis.com/token\"\n}}\n",
        digits(r, 21)
    )
}

/// The text that holds `p`, planted for rule `id`, when an assignment (`embed`) cannot hold it.
pub(super) fn context<R: Rng + ?Sized>(r: &mut R, id: &str, p: &Planted) -> String {
    let v = p.value.as_str();
    let host = pick(
        r,
        &[
            "db.internal",
            "10.0.4.17",
            "prod-db-1.example.net",
            "localhost",
        ],
    );
    let user = pick(r, &["app", "admin_user", "svc-backend", "deploy"]);
    match id {
        "gcp-service-account-key-id" => {
            let key = escaped_pem(r);
            service_account(r, v, &key)
        }
        "gcp-service-account-private-key" => {
            let key_id = hex(r, 40);
            service_account(r, &key_id, v)
        }
        "kubeconfig-client-key-data" => format!(
            "apiVersion: v1\nkind: Config\nusers:\n- name: admin@{}\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n    client-key-data: {v}\n",
            lower(r, 6)
        ),
        "azure-storage-connection-string" => {
            let account = lower(r, 10);
            if r.random_bool(0.5) {
                format!(
                    "AZURE_STORAGE_CONNECTION_STRING=\"DefaultEndpointsProtocol=https;AccountName={account};AccountKey={v};EndpointSuffix=core.windows.net\"\n"
                )
            } else {
                format!(
                    "  \"CosmosDb\": \"AccountEndpoint=https://{account}.documents.azure.com:443/;AccountKey={v};\",\n"
                )
            }
        }
        "azure-shared-access-key" => {
            let ns = lower(r, 8);
            if r.random_bool(0.5) {
                format!(
                    "SERVICEBUS_CONNECTION=Endpoint=sb://{ns}.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={v}\n"
                )
            } else {
                format!("\"IotHub\": \"HostName={ns}.azure-devices.net;DeviceId=sensor-{};SharedAccessKey={v}\"\n", digits(r, 3))
            }
        }
        "azure-sas-token" => {
            let account = lower(r, 10);
            if r.random_bool(0.5) {
                format!(
                    "curl -o report.csv \"https://{account}.blob.core.windows.net/exports/report.csv?sv=2022-11-02&ss=bfqt&srt=sco&sp=rwdlacupiytfx&se=2026-12-31T23:59:59Z&st=2026-01-01T00:00:00Z&spr=https&sig={v}\"\n"
                )
            } else {
                format!("AZURE_STORAGE_SAS_TOKEN=\"?sp=r&st=2026-03-01T09:00:00Z&se=2026-03-02T17:00:00Z&spr=https&sv=2022-11-02&sr=b&sig={v}\"\n")
            }
        }
        "npmrc-auth-token" => {
            if p.name == "_auth" {
                format!("registry=https://npm.example.com/\n_auth={v}\nalways-auth=true\n")
            } else {
                let registry = pick(r, &["registry.npmjs.org", "npm.pkg.github.com"]);
                format!("//{registry}/:_authToken={v}\n")
            }
        }
        "fly-io-macaroon" => format!("export FLY_API_TOKEN=\"FlyV1 {v}\"\n"),
        "jwt" => match len(r, 0, 2) {
            0 => format!("Authorization: Bearer {v}\n"),
            _ => embed(r, p),
        },
        "basic-auth-header" => match len(r, 0, 2) {
            0 => format!("Authorization: Basic {v}\n"),
            1 => format!("curl -H \"Authorization: Basic {v}\" https://api.example.com/v1/reports\n"),
            _ => format!("headers = {{\"Authorization\": \"Basic {v}\", \"Accept\": \"application/json\"}}\n"),
        },
        "bearer-token" => match len(r, 0, 3) {
            0 => format!("Authorization: Bearer {v}\n"),
            1 => format!("curl -sS -H 'Authorization: Bearer {v}' https://api.example.com/v2/me\n"),
            2 => format!("headers = {{\"Authorization\": \"Bearer {v}\"}}\n"),
            _ => format!("xhr.setRequestHeader('Authorization', 'Bearer {v}');\n"),
        },
        "docker-config-auth" => format!(
            "{{\n  \"auths\": {{\n    \"{}\": {{\n      \"auth\": \"{v}\"\n    }}\n  }}\n}}\n",
            pick(r, &["https://index.docker.io/v1/", "ghcr.io", "registry.example.com:5000"])
        ),
        "url-password" => {
            let url = match len(r, 0, 7) {
                0 => format!("postgres://{user}:{v}@{host}:5432/app"),
                1 => format!("postgresql://{user}:{v}@{host}/orders?sslmode=require"),
                2 => format!("mysql://{user}:{v}@{host}:3306/shop"),
                3 => format!("mongodb+srv://{user}:{v}@cluster0.{}.mongodb.net/test?retryWrites=true&w=majority", lower(r, 5)),
                4 => format!("redis://:{v}@{host}:6379/0"),
                5 => format!("amqps://{user}:{v}@rabbit.example.net:5671/vhost"),
                6 => format!("https://{user}:{v}@git.example.com/org/repo.git"),
                _ => format!("smtp://{user}:{v}@smtp.example.org:587"),
            };
            match len(r, 0, 3) {
                0 => format!("DATABASE_URL={url}\n"),
                1 => format!("    \"url\": \"{url}\",\n"),
                2 => format!("engine = create_engine(\"{url}\")\n"),
                _ => format!("await mongoose.connect('{url}');\n"),
            }
        }
        "connection-string-password" => {
            let db = lower(r, 6);
            match len(r, 0, 3) {
                0 => format!(
                    "    \"Default\": \"Server=tcp:{}.database.windows.net,1433;Initial Catalog={db};Persist Security Info=False;User ID={user};Password={v};MultipleActiveResultSets=False;Encrypt=True;\"\n",
                    lower(r, 8)
                ),
                1 => format!("DSN=\"Driver={{ODBC Driver 18 for SQL Server}};Server={host};Database={db};Uid={user};Pwd={v};Encrypt=yes;\"\n"),
                2 => format!("url = \"jdbc:sqlserver://{host}:1433;databaseName={db};user={user};password={v};encrypt=true\"\n"),
                _ => format!("var cs = \"Host={host};Port=5432;Database={db};Username={user};Password={v}\";\n"),
            }
        }
        "url-query-password" => match len(r, 0, 2) {
            0 => format!("spring.datasource.url=jdbc:mysql://{host}:3306/shop?user={user}&password={v}&useSSL=true\n"),
            1 => format!("GET https://portal.example.com/api/login?username={user}&password={v} HTTP/1.1\n"),
            _ => format!("jdbc:postgresql://{host}:5432/app?user={user}&password={v}&ssl=true\n"),
        },
        "jdbc-oracle-password" => {
            if r.random_bool(0.5) {
                let user = pick(r, &["app", "admin_user", "deploy", "HR"]);
                format!("db.url=jdbc:oracle:thin:{user}/{v}@//{host}:1521/ORCLPDB1\n")
            } else {
                format!("String url = \"jdbc:oracle:thin:scott/{v}@{host}:1521:ORCL\";\n")
            }
        }
        "curl-user-password" => match len(r, 0, 2) {
            0 => format!("curl -u {user}:{v} https://{host}/api/v1/items\n"),
            1 => format!("curl -s --user \"{user}:{v}\" -X POST https://ci.example.com/job/build\n"),
            _ => format!("$ curl -fsSL -u '{user}:{v}' https://repo.example.com/artifact.tgz -o a.tgz\n"),
        },
        "rsa-private-key" | "ec-private-key" | "dsa-private-key" | "openssh-private-key" | "pkcs8-private-key"
        | "encrypted-private-key" | "pgp-private-key-block" | "putty-private-key" => {
            if r.random_bool(0.5) {
                format!("{v}\n")
            } else {
                format!("# {} (do not commit)\n{v}\n\nuser: {}\n", p.name, uuid(r))
            }
        }
        _ => embed(r, p),
    }
}
