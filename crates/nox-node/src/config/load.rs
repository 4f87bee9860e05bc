//! Reading `node.toml` (a `[chain] preset` expanded) and applying the `NOX_*` environment
//! overrides, each checked as it is applied.

use super::*;

impl NodeConfig {
    /// Reads `path` (a `[chain] preset` expanded, [`crate::chain_preset`]), then applies `NOX_*`
    /// overrides from `env`.
    pub fn load(path: &std::path::Path, env: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
        let parse_error = |e: toml::de::Error| ConfigError::Parse { path: path.to_path_buf(), message: e.to_string() };
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        let mut config: NodeConfig = match crate::chain_preset::expanded(&text, dir)? {
            Some(table) => table.try_into().map_err(parse_error)?,
            None => toml::from_str(&text).map_err(parse_error)?,
        };
        config.apply_env(env)?;
        Ok(config)
    }

    /// Environment overrides (documented in docs/configuration.md).
    pub fn apply_env(&mut self, env: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        fn parse<T: std::str::FromStr>(name: &'static str, value: String) -> Result<T, ConfigError>
        where
            T::Err: std::fmt::Display,
        {
            value.parse().map_err(|e: T::Err| ConfigError::Env { name, message: e.to_string() })
        }
        if let Some(v) = env("NOX_NODE_LISTEN") {
            self.node.listen = parse("NOX_NODE_LISTEN", v)?;
        }
        if let Some(v) = env("NOX_NODE_WEBSOCKET_LISTEN") {
            self.node.websocket_listen = Some(parse("NOX_NODE_WEBSOCKET_LISTEN", v)?);
        }
        if let Some(v) = env("NOX_NODE_WEBSOCKET_TLS_CERT") {
            self.node.websocket_tls_cert = Some(PathBuf::from(v));
        }
        if let Some(v) = env("NOX_NODE_WEBSOCKET_TLS_KEY") {
            self.node.websocket_tls_key = Some(PathBuf::from(v));
        }
        if let Some(v) = env("NOX_NODE_METRICS") {
            self.node.metrics = Some(parse("NOX_NODE_METRICS", v)?);
        }
        if let Some(v) = env("NOX_NODE_KEY_DIR") {
            self.node.key_dir = PathBuf::from(v);
        }
        if let Some(v) = env("NOX_NODE_POW_DIFFICULTY") {
            self.node.pow_difficulty = parse("NOX_NODE_POW_DIFFICULTY", v)?;
        }
        if let Some(v) = env("NOX_NODE_SPHINX_SCHEME") {
            self.node.sphinx_scheme = nox_topology::parse_scheme(&v)
                .map_err(|e| ConfigError::Env { name: "NOX_NODE_SPHINX_SCHEME", message: e.to_string() })?;
        }
        if let Some(v) = env("NOX_TOPOLOGY_FILE") {
            self.topology.file = Some(PathBuf::from(v));
        }
        if let Some(v) = env("NOX_TOPOLOGY_URL") {
            self.topology.url = Some(v);
        }
        if let Some(v) = env("NOX_TOPOLOGY_MIRRORS") {
            self.topology.mirrors = v.split(',').map(str::trim).filter(|u| !u.is_empty()).map(String::from).collect();
        }
        if let Some(v) = env("NOX_TOPOLOGY_REFRESH_SECS") {
            self.topology.refresh_secs = parse("NOX_TOPOLOGY_REFRESH_SECS", v)?;
        }
        if let Some(v) = env("NOX_MIXING_MEAN_DELAY_MS") {
            self.mixing.mean_delay_ms = parse("NOX_MIXING_MEAN_DELAY_MS", v)?;
        }
        if let Some(v) = env("NOX_COVER_LOOP_RATE") {
            self.cover.loop_rate = parse("NOX_COVER_LOOP_RATE", v)?;
        }
        if let Some(v) = env("NOX_COVER_DROP_RATE") {
            self.cover.drop_rate = parse("NOX_COVER_DROP_RATE", v)?;
        }
        if let Some(v) = env("NOX_PIPELINE_WORKERS") {
            self.pipeline.workers = parse("NOX_PIPELINE_WORKERS", v)?;
        }
        if let Some(v) = env("NOX_ADMISSION_NODE_RATE_PPS") {
            self.admission.node_rate_pps = parse("NOX_ADMISSION_NODE_RATE_PPS", v)?;
        }
        if let Some(v) = env("NOX_ADMISSION_CLIENT_RATE_PPS") {
            self.admission.client_rate_pps = parse("NOX_ADMISSION_CLIENT_RATE_PPS", v)?;
        }
        if let Some(v) = env("NOX_ADMISSION_PENALIZED_RATE_PPS") {
            self.admission.penalized_rate_pps = parse("NOX_ADMISSION_PENALIZED_RATE_PPS", v)?;
        }
        if let Some(v) = env("NOX_ADMISSION_ADAPTIVE_POW") {
            self.admission.adaptive_pow = parse("NOX_ADMISSION_ADAPTIVE_POW", v)?;
        }
        if let Some(v) = env("NOX_ADMISSION_EXPECTED_CLIENT_RATE") {
            self.admission.expected_client_rate = parse("NOX_ADMISSION_EXPECTED_CLIENT_RATE", v)?;
        }
        self.admission.validate().map_err(|e| ConfigError::Invalid { section: "admission", message: e.to_string() })?;
        if self.node.websocket_tls_cert.is_some() != self.node.websocket_tls_key.is_some() {
            return Err(ConfigError::Invalid {
                section: "node",
                message: "websocket_tls_cert and websocket_tls_key go together".into(),
            });
        }
        if self.node.websocket_tls_cert.is_some() && self.node.websocket_listen.is_none() {
            return Err(ConfigError::Invalid {
                section: "node",
                message: "websocket_tls_cert without websocket_listen".into(),
            });
        }
        if let Some(operator) = &self.operator {
            let message = match &self.chain {
                Some(chain) if chain.operator_key_file.is_some() => {
                    Some("[operator] keystore and [chain] operator_key_file both name the operator key: keep one")
                }
                _ if operator.password_file.is_some() == operator.password_env.is_some() => {
                    Some("give exactly one of password_file and password_env")
                }
                _ => None,
            };
            if let Some(message) = message {
                return Err(ConfigError::Invalid { section: "operator", message: message.into() });
            }
        }
        if self.observe.is_some() && !crate::observe::COMPILED_IN {
            return Err(ConfigError::Invalid { section: "observe", message: crate::observe::NOT_BUILT.into() });
        }
        if let Some(chaos) = &self.chaos {
            if !crate::chaos::COMPILED_IN {
                return Err(ConfigError::Invalid { section: "chaos", message: crate::chaos::NOT_BUILT.into() });
            }
            chaos.validate().map_err(|message| ConfigError::Invalid { section: "chaos", message })?;
        }
        let exit = &self.exit;
        let probability = |x: f64| (0.0..1.0).contains(&x);
        if !probability(exit.reply_loss_estimate) || !probability(exit.inject_reply_loss) {
            return Err(ConfigError::Invalid {
                section: "exit",
                message: "reply_loss_estimate and inject_reply_loss must be in [0, 1)".into(),
            });
        }
        if !(exit.reply_target > 0.0 && exit.reply_target < 1.0) {
            return Err(ConfigError::Invalid { section: "exit", message: "reply_target must be in (0, 1)".into() });
        }
        Ok(())
    }
}
