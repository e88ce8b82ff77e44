//! Secrets in ralph-tui's environment: the API key variable (`--api-key-env`) and any variable
//! whose name says it holds a key, token, secret or password. Commands and the verification
//! never get them in their environment (a hook that runs unconfined, the person's own program,
//! keeps all but the API key variables), and their values are masked in every tool's output
//! before it is logged, shown or sent to the model, so a key that reaches a command another
//! way (a `.env` file) still does not travel.

/// Values shorter than this are not masked (they would mask ordinary words).
const MIN_MASKED_LEN: usize = 8;

/// What a masked value reads as.
pub const MASK: &str = "[secret hidden]";

/// The variable names of the API keys ralph-tui knows without being told.
const KNOWN_KEYS: &[&str] = &["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN"];

/// Whether a variable's name says it holds a secret.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    KNOWN_KEYS.contains(&upper.as_str())
        || [
            "API_KEY",
            "APIKEY",
            "SECRET",
            "PASSWORD",
            "PASSWD",
            "ACCESS_KEY",
        ]
        .iter()
        .any(|word| upper.contains(word))
        || upper.ends_with("_TOKEN")
        || upper == "TOKEN"
}

/// The secret variables of a run and their values. `Debug` shows the names only.
#[derive(Clone, Default)]
pub struct Secrets {
    names: Vec<String>,
    /// The API key variables among `names` (the others were found by their names' look).
    keys: Vec<String>,
    values: Vec<String>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets")
            .field("names", &self.names)
            .field("values", &self.values.len())
            .finish()
    }
}

impl Secrets {
    /// Every variable of this process's environment whose name says it is a secret.
    pub fn from_env() -> Self {
        let mut secrets = Self::default();
        for (name, _) in std::env::vars_os() {
            if let Some(name) = name.to_str().filter(|n| is_secret_name(n)) {
                secrets.add_name(name);
            }
        }
        for name in KNOWN_KEYS {
            secrets.add(name);
        }
        secrets
    }

    /// Adds the API key variable `name` (e.g. the one `--api-key-env` names), with its value
    /// if set.
    pub fn add(&mut self, name: &str) {
        self.add_name(name);
        if !name.is_empty() && !self.keys.iter().any(|k| k == name) {
            self.keys.push(name.to_string());
        }
    }

    fn add_name(&mut self, name: &str) {
        if name.is_empty() || self.names.iter().any(|n| n == name) {
            return;
        }
        self.names.push(name.to_string());
        if let Ok(value) = std::env::var(name) {
            self.add_value(value.trim());
        }
    }

    /// Only the API key variables, for a program of the person's own that runs unconfined
    /// (a hook with `sandbox = "off"` may need its webhook's token, never the model's key).
    pub fn keys_only(&self) -> Self {
        Self {
            names: self.keys.clone(),
            keys: self.keys.clone(),
            values: self.values.clone(),
        }
    }

    fn add_value(&mut self, value: &str) {
        if value.len() >= MIN_MASKED_LEN && !self.values.iter().any(|v| v == value) {
            self.values.push(value.to_string());
            // Longest first, so a value that contains another is masked whole.
            self.values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        }
    }

    /// The variables to remove from a child's environment.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// `text` with every secret value replaced by [`MASK`].
    pub fn mask(&self, text: &str) -> String {
        let mut out = text.to_string();
        for value in &self.values {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), MASK);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_say_secret_are_secret() {
        for name in [
            "OPENAI_API_KEY",
            "my_api_key",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "TOKENIZERS_PARALLELISM", "CARGO_HOME"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn masks_every_value_longest_first_and_hides_values_from_debug() {
        let mut secrets = Secrets::default();
        secrets.add_value("sk-abcdefgh");
        secrets.add_value("sk-abcdefgh-longer");
        secrets.add_value("short");
        let masked = secrets.mask("a sk-abcdefgh-longer b sk-abcdefgh c short");
        assert_eq!(masked, format!("a {MASK} b {MASK} c short"));
        assert!(!format!("{secrets:?}").contains("sk-"));
    }

    #[test]
    fn keys_only_keeps_the_api_key_variables() {
        let mut secrets = Secrets::default();
        secrets.add_name("CHAT_TOKEN");
        secrets.add("SERVER_KEY");
        assert_eq!(secrets.names(), ["CHAT_TOKEN", "SERVER_KEY"]);
        assert_eq!(secrets.keys_only().names(), ["SERVER_KEY"]);
    }
}
