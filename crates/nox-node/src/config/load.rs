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
        let env = Overrides(env);
        env.set("NOX_NODE_LISTEN", &mut self.node.listen)?;
        env.set_some("NOX_NODE_WEBSOCKET_LISTEN", &mut self.node.websocket_listen)?;
        env.set_some("NOX_NODE_WEBSOCKET_TLS_CERT", &mut self.node.websocket_tls_cert)?;
        env.set_some("NOX_NODE_WEBSOCKET_TLS_KEY", &mut self.node.websocket_tls_key)?;
        env.set_some("NOX_NODE_METRICS", &mut self.node.metrics)?;
        env.set("NOX_NODE_KEY_DIR", &mut self.node.key_dir)?;
        env.set("NOX_NODE_POW_DIFFICULTY", &mut self.node.pow_difficulty)?;
        if let Some(v) = env.get("NOX_NODE_SPHINX_SCHEME") {
            self.node.sphinx_scheme = nox_topology::parse_scheme(&v)
                .map_err(|e| ConfigError::Env { name: "NOX_NODE_SPHINX_SCHEME", message: e.to_string() })?;
        }
        env.set_some("NOX_TOPOLOGY_FILE", &mut self.topology.file)?;
        env.set_some("NOX_TOPOLOGY_URL", &mut self.topology.url)?;
        if let Some(v) = env.get("NOX_TOPOLOGY_MIRRORS") {
            self.topology.mirrors = v.split(',').map(str::trim).filter(|u| !u.is_empty()).map(String::from).collect();
        }
        env.set("NOX_TOPOLOGY_REFRESH_SECS", &mut self.topology.refresh_secs)?;
        env.set("NOX_MIXING_MEAN_DELAY_MS", &mut self.mixing.mean_delay_ms)?;
        env.set("NOX_COVER_LOOP_RATE", &mut self.cover.loop_rate)?;
        env.set("NOX_COVER_DROP_RATE", &mut self.cover.drop_rate)?;
        env.set("NOX_PIPELINE_WORKERS", &mut self.pipeline.workers)?;
        env.set("NOX_ADMISSION_NODE_RATE_PPS", &mut self.admission.node_rate_pps)?;
        env.set("NOX_ADMISSION_CLIENT_RATE_PPS", &mut self.admission.client_rate_pps)?;
        env.set("NOX_ADMISSION_PENALIZED_RATE_PPS", &mut self.admission.penalized_rate_pps)?;
        env.set("NOX_ADMISSION_ADAPTIVE_POW", &mut self.admission.adaptive_pow)?;
        env.set("NOX_ADMISSION_EXPECTED_CLIENT_RATE", &mut self.admission.expected_client_rate)?;
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

/// The `NOX_*` variables as `env` answers them: a variable that is set replaces its field,
/// parsed as the field's type (a path or a string as given); a value that does not parse is
/// refused with the variable's name.
struct Overrides<E>(E);

impl<E: Fn(&str) -> Option<String>> Overrides<E> {
    /// The variable as set, unparsed.
    fn get(&self, name: &str) -> Option<String> {
        (self.0)(name)
    }

    fn parsed<T: std::str::FromStr>(&self, name: &'static str) -> Result<Option<T>, ConfigError>
    where
        T::Err: std::fmt::Display,
    {
        let parse =
            |value: String| value.parse().map_err(|e: T::Err| ConfigError::Env { name, message: e.to_string() });
        self.get(name).map(parse).transpose()
    }

    fn set<T: std::str::FromStr>(&self, name: &'static str, field: &mut T) -> Result<(), ConfigError>
    where
        T::Err: std::fmt::Display,
    {
        if let Some(value) = self.parsed(name)? {
            *field = value;
        }
        Ok(())
    }

    fn set_some<T: std::str::FromStr>(&self, name: &'static str, field: &mut Option<T>) -> Result<(), ConfigError>
    where
        T::Err: std::fmt::Display,
    {
        if let Some(value) = self.parsed(name)? {
            *field = Some(value);
        }
        Ok(())
    }
}
