//! Values of the cloud, source-hosting, CI and package-registry rules, in their vendors' formats.

use rand::Rng;

use super::super::{chars, ALNUM, BASE64URL, HEX};
use super::util::{
    alnum, b64url, base64, base64url, bytes, digits, hex, len, lower, pick, prefixed, uuid, v,
    Prefixed, BASE32, LOWER_ALNUM, UPPER_ALNUM, UPPER_HEX, V,
};

/// The rules whose value is a fixed prefix and a run of one charset: `(rule id, prefix,
/// charset, length, names)`.
#[rustfmt::skip]
const PREFIXED: &[Prefixed] = &[
    ("gcp-service-account-key-id", "", HEX, 40, &["private_key_id"]),
    ("azure-openai-api-key", "", HEX, 32,
        &["AZURE_OPENAI_API_KEY", "AZURE_OPENAI_KEY", "azureOpenAIKey"]),
    ("digitalocean-pat", "dop_v1_", HEX, 64, &["DIGITALOCEAN_TOKEN", "DO_TOKEN"]),
    ("digitalocean-oauth-token", "doo_v1_", HEX, 64, &["DIGITALOCEAN_ACCESS_TOKEN"]),
    ("digitalocean-refresh-token", "dor_v1_", HEX, 64, &["DIGITALOCEAN_REFRESH_TOKEN"]),
    ("tencent-cloud-secret-id", "AKID", ALNUM, 32, &["TENCENTCLOUD_SECRET_ID"]),
    ("cloudflare-global-api-key", "", HEX, 37,
        &["CLOUDFLARE_API_KEY", "CLOUDFLARE_GLOBAL_API_KEY"]),
    ("heroku-api-key-v2", "HRKU-AA", BASE64URL, 58, &["HEROKU_API_KEY"]),
    ("linode-api-token", "", HEX, 64, &["LINODE_TOKEN", "LINODE_API_TOKEN"]),
    ("scaleway-access-key", "SCW", UPPER_ALNUM, 17, &["SCW_ACCESS_KEY"]),
    ("fly-io-token", "fo1_", BASE64URL, 43, &["FLY_API_TOKEN"]),
    ("vercel-token", "", ALNUM, 24, &["VERCEL_TOKEN", "vercel_api_token"]),
    ("netlify-legacy-token", "", BASE64URL, 43, &["NETLIFY_AUTH_TOKEN", "netlify_token"]),
    ("supabase-pat", "sbp_", HEX, 40, &["SUPABASE_ACCESS_TOKEN"]),
    ("planetscale-api-token", "pscale_tkn_", BASE64URL, 43, &["PLANETSCALE_SERVICE_TOKEN"]),
    ("planetscale-password", "pscale_pw_", BASE64URL, 43, &["PLANETSCALE_DB_PASSWORD"]),
    ("planetscale-oauth-token", "pscale_oauth_", BASE64URL, 43, &["PLANETSCALE_OAUTH_TOKEN"]),
    ("vault-batch-token", "hvb.AAAAAQ", BASE64URL, 134, &["VAULT_TOKEN"]),
    ("pulumi-access-token", "pul-", HEX, 40, &["PULUMI_ACCESS_TOKEN"]),
    ("ibm-cloud-api-key", "", BASE64URL, 44, &["IBM_CLOUD_API_KEY", "IBMCLOUD_API_KEY"]),
    ("hetzner-cloud-token", "", ALNUM, 64, &["HCLOUD_TOKEN", "HETZNER_API_TOKEN"]),
    ("vultr-api-key", "", UPPER_ALNUM, 36, &["VULTR_API_KEY"]),
    ("github-pat", "ghp_", ALNUM, 36, &["GITHUB_TOKEN", "GH_TOKEN"]),
    ("github-oauth-token", "gho_", ALNUM, 36, &["GITHUB_TOKEN", "gh_oauth_token"]),
    ("github-user-to-server-token", "ghu_", ALNUM, 36, &["GITHUB_TOKEN"]),
    ("github-server-to-server-token", "ghs_", ALNUM, 36, &["GITHUB_TOKEN"]),
    ("github-refresh-token", "ghr_", ALNUM, 76, &["GITHUB_REFRESH_TOKEN"]),
    ("gitlab-deploy-token", "gldt-", BASE64URL, 20, &["GITLAB_DEPLOY_TOKEN"]),
    ("gitlab-runner-registration-token", "GR1348941", BASE64URL, 20, &["REGISTRATION_TOKEN"]),
    ("gitlab-pipeline-trigger-token", "glptt-", HEX, 40, &["TRIGGER_TOKEN"]),
    ("gitlab-oauth-app-secret", "gloas-", HEX, 64, &["GITLAB_OAUTH_SECRET"]),
    ("gitlab-feed-token", "glft-", BASE64URL, 20, &["GITLAB_FEED_TOKEN"]),
    ("gitlab-incoming-mail-token", "glimt-", BASE64URL, 25, &["INCOMING_EMAIL_TOKEN"]),
    ("gitlab-agent-token", "glagent-", BASE64URL, 50, &["GITLAB_AGENT_TOKEN"]),
    ("gitlab-scim-token", "glsoat-", BASE64URL, 20, &["GITLAB_SCIM_TOKEN"]),
    ("gitlab-feature-flag-client-token", "glffct-", BASE64URL, 20, &["UNLEASH_INSTANCE_ID"]),
    ("npm-access-token", "npm_", ALNUM, 36, &["NPM_TOKEN", "NODE_AUTH_TOKEN"]),
    ("rubygems-api-key", "rubygems_", HEX, 48, &["GEM_HOST_API_KEY"]),
    ("nuget-api-key", "oy2", LOWER_ALNUM, 43, &["NUGET_API_KEY"]),
    ("circleci-api-token", "", HEX, 40, &["CIRCLECI_TOKEN", "CIRCLE_TOKEN", "circleci_api_key"]),
    ("buildkite-token", "bkua_", HEX, 40, &["BUILDKITE_API_TOKEN"]),
    ("jfrog-api-key", "AKCp", ALNUM, 69, &["ARTIFACTORY_API_KEY", "JFROG_API_KEY"]),
    ("jfrog-reference-token", "cmVmdGtuOjAxOj", ALNUM, 50, &["JFROG_ACCESS_TOKEN"]),
    ("crates-io-token", "cio", ALNUM, 32, &["CARGO_REGISTRY_TOKEN"]),
    ("prefect-api-key", "pnu_", ALNUM, 36, &["PREFECT_API_KEY"]),
    ("readme-api-key", "rdme_", LOWER_ALNUM, 70, &["README_API_KEY"]),
    ("deno-deploy-token", "ddp_", ALNUM, 36, &["DENO_DEPLOY_TOKEN"]),
];

/// The value of rule `id`, or `None` when `id` is not one of this module's.
pub(super) fn make<R: Rng + ?Sized>(rng: &mut R, id: &str) -> Option<V> {
    if let Some(value) = prefixed(rng, PREFIXED, id) {
        return Some(value);
    }
    let r = rng;
    Some(match id {
        "aws-access-key-id" => {
            let prefix = pick(r, &["AKIA", "ASIA", "ABIA", "ACCA"]);
            let value = format!("{prefix}{}", chars(r, BASE32, 16));
            v(
                value,
                r,
                &["AWS_ACCESS_KEY_ID", "aws_access_key_id", "awsAccessKeyId"],
            )
        }
        "aws-secret-access-key" => {
            let value = chars(
                r,
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
                40,
            );
            let names = [
                "AWS_SECRET_ACCESS_KEY",
                "aws_secret_access_key",
                "awsSecretAccessKey",
                "AWS_SECRET_KEY",
            ];
            v(value, r, &names)
        }
        "aws-session-token" => {
            // The token is base64 of a serialized structure whose first bytes are fixed.
            let head: &[u8] = if r.random_bool(0.7) {
                b"!\n\torigin_ec"
            } else {
                b"\x17\n\x06er/aws\x10"
            };
            let n = len(r, 200, 320);
            let mut data = head.to_vec();
            data.extend(bytes(r, n));
            v(
                base64(&data),
                r,
                &["AWS_SESSION_TOKEN", "aws_session_token"],
            )
        }
        "aws-bedrock-api-key" => {
            let plain = format!(
                "BedrockAPIKey-{}-at-{}:{}",
                alnum(r, 4),
                digits(r, 12),
                alnum(r, 40)
            );
            v(
                format!("ABSK{}", base64(plain.as_bytes())),
                r,
                &["AWS_BEARER_TOKEN_BEDROCK"],
            )
        }
        "gcp-api-key" => {
            let value = format!("AIza{}", b64url(r, 35));
            v(
                value,
                r,
                &[
                    "GOOGLE_API_KEY",
                    "FIREBASE_API_KEY",
                    "MAPS_API_KEY",
                    "googleApiKey",
                ],
            )
        }
        "gemini-api-key" => {
            let value = format!("AIza{}", b64url(r, 35));
            v(
                value,
                r,
                &["GEMINI_API_KEY", "gemini_api_key", "GOOGLE_GEMINI_KEY"],
            )
        }
        "gcp-oauth-client-secret" => {
            let value = format!("GOCSPX-{}", b64url(r, 28));
            v(
                value,
                r,
                &["GOOGLE_CLIENT_SECRET", "google_oauth_client_secret"],
            )
        }
        "google-oauth-refresh-token" => {
            let value = format!(
                "1//0{}{}",
                pick(r, &["g", "e", "4", "3", "9"]),
                b64url(r, 98)
            );
            v(value, r, &["GOOGLE_REFRESH_TOKEN", "refresh_token"])
        }
        "google-oauth-access-token" => {
            let n = len(r, 150, 220);
            let value = format!("ya29.a0{}", b64url(r, n));
            v(value, r, &["GOOGLE_ACCESS_TOKEN", "access_token"])
        }
        "fcm-server-key" => {
            let value = format!("AAAA{}:APA91b{}", b64url(r, 7), b64url(r, 134));
            v(value, r, &["FCM_SERVER_KEY", "firebase_server_key"])
        }
        "azure-storage-account-key" => {
            let value = base64(&bytes(r, 64));
            v(
                value,
                r,
                &[
                    "AZURE_STORAGE_KEY",
                    "AZURE_STORAGE_ACCOUNT_KEY",
                    "storage_account_key",
                ],
            )
        }
        "azure-storage-connection-string" => v(
            base64(&bytes(r, 64)),
            r,
            &["AZURE_STORAGE_CONNECTION_STRING"],
        ),
        "azure-shared-access-key" => v(base64(&bytes(r, 32)), r, &["SERVICEBUS_CONNECTION_STRING"]),
        "azure-ad-client-secret" => {
            let set = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_~.-";
            let value = format!(
                "{}{}Q~{}",
                chars(r, set, 3),
                digits(r, 1),
                chars(r, set, 34)
            );
            v(value, r, &["AZURE_CLIENT_SECRET", "client_secret"])
        }
        "azure-devops-pat" => {
            let value = format!("{}AZDO{}", alnum(r, 76), alnum(r, 4));
            v(
                value,
                r,
                &["AZURE_DEVOPS_PAT", "AZURE_DEVOPS_EXT_PAT", "ado_pat"],
            )
        }
        "azure-devops-pat-legacy" => {
            let value = chars(r, "abcdefghijklmnopqrstuvwxyz234567", 52);
            v(
                value,
                r,
                &["AZURE_DEVOPS_PAT", "VSTS_PAT", "AZDO_TOKEN", "ado_pat"],
            )
        }
        "alibaba-access-key-id" => {
            let n = *[12usize, 16, 20].get(len(r, 0, 2)).unwrap_or(&20);
            let value = format!("LTAI{}", alnum(r, n));
            v(
                value,
                r,
                &["ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIYUN_ACCESS_KEY_ID"],
            )
        }
        "alibaba-access-key-secret" => {
            let names = [
                "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
                "aliyun_access_key_secret",
            ];
            v(alnum(r, 30), r, &names)
        }
        "cloudflare-api-token" => {
            let value = chars(
                r,
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
                40,
            );
            v(value, r, &["CLOUDFLARE_API_TOKEN", "cloudflare_token"])
        }
        "cloudflare-scannable-token" => {
            let prefix = pick(r, &["cfk_", "cfut_", "cfat_"]);
            let value = format!("{prefix}{}{}", alnum(r, 40), alnum(r, 8));
            v(value, r, &["CLOUDFLARE_API_TOKEN", "CF_API_TOKEN"])
        }
        "cloudflare-origin-ca-key" => {
            let value = format!("v1.0-{}-{}", hex(r, 24), hex(r, 146));
            v(value, r, &["CF_ORIGIN_CA_KEY"])
        }
        "heroku-api-key" => {
            let value = uuid(r);
            v(value, r, &["HEROKU_API_KEY", "heroku_auth_token"])
        }
        "scaleway-secret-key" => {
            let value = uuid(r);
            v(value, r, &["SCW_SECRET_KEY", "scaleway_secret_key"])
        }
        "fly-io-macaroon" => {
            let (a, b) = (len(r, 120, 200), len(r, 50, 90));
            let value = format!("fm2_{},fm2_{}", base64(&bytes(r, a)), base64(&bytes(r, b)));
            v(value, r, &["FLY_API_TOKEN", "FLY_ACCESS_TOKEN"])
        }
        "netlify-pat" => {
            let value = format!(
                "nfp_{}",
                chars(
                    r,
                    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_",
                    36
                )
            );
            v(value, r, &["NETLIFY_AUTH_TOKEN"])
        }
        "supabase-secret-key" => v(
            format!("sb_secret_{}_{}", alnum(r, 22), alnum(r, 8)),
            r,
            &["SUPABASE_SECRET_KEY"],
        ),
        "databricks-api-token" => {
            let suffix = if r.random_bool(0.3) { "-2" } else { "" };
            v(
                format!("dapi{}{suffix}", hex(r, 32)),
                r,
                &["DATABRICKS_TOKEN"],
            )
        }
        "doppler-token" => {
            let value = match len(r, 0, 3) {
                0 => format!("dp.pt.{}", alnum(r, 43)),
                1 => format!("dp.st.{}.{}", pick(r, &["dev", "stg", "prd"]), alnum(r, 40)),
                2 => format!("dp.sa.{}", alnum(r, 43)),
                _ => format!("dp.ct.{}", alnum(r, 43)),
            };
            v(value, r, &["DOPPLER_TOKEN"])
        }
        "vault-service-token" => {
            let value = if r.random_bool(0.8) {
                format!("hvs.CAESI{}", b64url(r, 86))
            } else {
                format!("hvs.{}", alnum(r, 24))
            };
            v(value, r, &["VAULT_TOKEN"])
        }
        "terraform-cloud-token" => {
            let value = format!("{}.atlasv1.{}", alnum(r, 14), b64url(r, 67));
            v(
                value,
                r,
                &["TFE_TOKEN", "TF_TOKEN_app_terraform_io", "ATLAS_TOKEN"],
            )
        }
        "github-fine-grained-pat" => {
            let value = format!("github_pat_{}_{}", alnum(r, 22), alnum(r, 59));
            v(value, r, &["GITHUB_TOKEN", "GH_PAT"])
        }
        "gitlab-pat" => {
            let value = if r.random_bool(0.5) {
                format!("glpat-{}", b64url(r, 20))
            } else {
                format!("glpat-{}.01.{}", b64url(r, 27), chars(r, LOWER_ALNUM, 9))
            };
            v(value, r, &["GITLAB_TOKEN", "gitlab_private_token"])
        }
        "gitlab-runner-auth-token" => {
            let value = format!("glrt-{}{}", pick(r, &["", "t1_", "t2_"]), b64url(r, 27));
            v(value, r, &["RUNNER_TOKEN", "CI_SERVER_TOKEN"])
        }
        "gitlab-ci-job-token" => v(
            format!("glcbt-{}_{}", hex(r, 2), b64url(r, 20)),
            r,
            &["CI_JOB_TOKEN"],
        ),
        "bitbucket-app-password" => {
            let value = format!("ATBB{}{}", alnum(r, 24), chars(r, UPPER_HEX, 8));
            v(value, r, &["BITBUCKET_APP_PASSWORD"])
        }
        "atlassian-api-token" => {
            let value = format!("ATATT3xFfGF0{}={}", b64url(r, 171), chars(r, UPPER_HEX, 8));
            v(
                value,
                r,
                &["JIRA_API_TOKEN", "ATLASSIAN_API_TOKEN", "CONFLUENCE_TOKEN"],
            )
        }
        "bitbucket-access-token" => {
            let value = format!("ATCTT3xFfGN0{}={}", b64url(r, 171), chars(r, UPPER_HEX, 8));
            v(value, r, &["BITBUCKET_ACCESS_TOKEN"])
        }
        "atlassian-api-token-legacy" => {
            let names = [
                "JIRA_API_TOKEN",
                "ATLASSIAN_API_TOKEN",
                "confluence_api_key",
            ];
            v(alnum(r, 24), r, &names)
        }
        "pypi-upload-token" => {
            let host = pick(r, &["AgEIcHlwaS5vcmc", "AgENdGVzdC5weXBpLm9yZw"]);
            let n = len(r, 140, 180);
            v(
                format!("pypi-{host}{}", b64url(r, n)),
                r,
                &["PYPI_API_TOKEN", "TWINE_PASSWORD"],
            )
        }
        "dockerhub-pat" => {
            let value = if r.random_bool(0.7) {
                format!("dckr_pat_{}", b64url(r, 27))
            } else {
                format!("dckr_oat_{}", b64url(r, 32))
            };
            v(value, r, &["DOCKERHUB_TOKEN", "DOCKER_PASSWORD"])
        }
        "circleci-personal-token" => {
            let value = format!("CCIPAT_{}_{}", alnum(r, 22), hex(r, 40));
            v(value, r, &["CIRCLECI_TOKEN", "CIRCLE_TOKEN"])
        }
        "circleci-project-token" => v(
            format!("CCIPRJ_{}_{}", alnum(r, 22), hex(r, 40)),
            r,
            &["CIRCLECI_PROJECT_TOKEN"],
        ),
        "sonarqube-token" => {
            let value = format!("{}{}", pick(r, &["squ_", "sqp_", "sqa_"]), hex(r, 40));
            v(value, r, &["SONAR_TOKEN"])
        }
        "postman-api-key" => v(
            format!("PMAK-{}-{}", hex(r, 24), hex(r, 34)),
            r,
            &["POSTMAN_API_KEY"],
        ),
        "sourcegraph-token" => {
            let mid = if r.random_bool(0.5) {
                format!("{}_", hex(r, 16))
            } else {
                String::new()
            };
            v(format!("sgp_{mid}{}", hex(r, 40)), r, &["SRC_ACCESS_TOKEN"])
        }
        "harness-token" => {
            let kind = pick(r, &["pat", "sat"]);
            let value = format!("{kind}.{}.{}.{}", b64url(r, 22), hex(r, 24), alnum(r, 20));
            v(value, r, &["HARNESS_API_KEY", "HARNESS_PLATFORM_API_KEY"])
        }
        "snyk-api-token" => {
            let value = uuid(r);
            v(value, r, &["SNYK_TOKEN", "snyk_api_token"])
        }
        "tailscale-key" => {
            let kind = pick(r, &["auth", "api", "client"]);
            let value = format!("tskey-{kind}-k{}CNTRL-{}", alnum(r, 10), alnum(r, 33));
            v(value, r, &["TS_AUTHKEY", "TAILSCALE_AUTH_KEY"])
        }
        "dynatrace-api-token" => {
            let value = format!(
                "dt0c01.{}.{}",
                chars(r, UPPER_ALNUM, 24),
                chars(r, UPPER_ALNUM, 64)
            );
            v(value, r, &["DT_API_TOKEN"])
        }
        "onepassword-service-account-token" => {
            let json = format!(
                r#"{{"signInAddress":"my.1password.com","email":"{}@1passwordserviceaccounts.com","srpX":"{}","muk":{{"alg":"A256GCM","k":"{}"}}}}"#,
                lower(r, 12),
                hex(r, 64),
                b64url(r, 43)
            );
            v(
                format!("ops_{}", base64url(json.as_bytes())),
                r,
                &["OP_SERVICE_ACCOUNT_TOKEN"],
            )
        }
        _ => return None,
    })
}
