//! A managed Anvil (the Foundry local chain) for testnets and tests: found in the repository's
//! pinned npm tools (installed on first use), started on a loopback port, waited for.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::ChainError;

/// Anvil's first development account (from its default mnemonic): the testnet deployer.
pub const DEV_KEY: &str = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

/// Where a Foundry tool is: `$NOX_<TOOL>` (e.g. `NOX_ANVIL`), then `tools/node_modules/.bin/<tool>`
/// in the first ancestor of the current directory (or of this crate, for tests) that has
/// `tools/package.json`; installed there with `npm install --prefix tools` if missing.
pub fn foundry_tool(name: &str) -> Result<PathBuf, ChainError> {
    let var = format!("NOX_{}", name.to_ascii_uppercase());
    if let Some(path) = std::env::var_os(&var) {
        return Ok(PathBuf::from(path));
    }
    let starts = [std::env::current_dir().ok(), Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")))];
    let tools = starts
        .iter()
        .flatten()
        .flat_map(|start| start.ancestors())
        .map(|dir| dir.join("tools"))
        .find(|tools| tools.join("package.json").is_file())
        .ok_or_else(|| {
            ChainError::Tool(format!(
                "{name} not found: set {var} to its path, or run from the NOX repository (tools/package.json pins it)"
            ))
        })?;
    let wrapper = tools.join("node_modules/.bin").join(name);
    if !wrapper.exists() {
        install_tools(&tools)?;
    }
    // The npm package's `.bin` entry is a Node.js wrapper that spawns the platform binary; a
    // SIGKILL to the wrapper would orphan the real process, so run the binary itself.
    let native = native_binary(&tools, name);
    if let Some(native) = native.filter(|p| p.exists()) {
        Ok(native)
    } else if wrapper.exists() {
        Ok(wrapper)
    } else {
        Err(ChainError::Tool(format!(
            "{} is still missing after `npm install --prefix {}`",
            wrapper.display(),
            tools.display()
        )))
    }
}

/// `@foundry-rs/<tool>-<os>-<arch>/bin/<tool>`, the platform package the wrapper would run.
fn native_binary(tools: &Path, name: &str) -> Option<PathBuf> {
    let os = match std::env::consts::OS {
        "linux" => "linux",
        "macos" => "darwin",
        _ => return None,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        _ => return None,
    };
    Some(tools.join(format!("node_modules/@foundry-rs/{name}-{os}-{arch}/bin/{name}")))
}

fn install_tools(tools: &Path) -> Result<(), ChainError> {
    eprintln!(
        "nox: installing the pinned Ethereum tools (Anvil, Cast, Forge) with `npm install --prefix {}` …",
        tools.display()
    );
    let status = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(tools)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| ChainError::Tool(format!("npm is needed to install Anvil ({e}); install Node.js and npm")))?;
    if status.success() {
        Ok(())
    } else {
        Err(ChainError::Tool(format!("`npm install --prefix {}` failed ({status})", tools.display())))
    }
}

/// How to start Anvil.
#[derive(Clone, Debug)]
pub struct AnvilOptions {
    /// Loopback port to listen on.
    pub port: u16,
    /// Seconds between blocks; `None` mines one block per transaction (instant).
    pub block_time: Option<u64>,
    /// Chain id.
    pub chain_id: u64,
    /// Where Anvil's output goes (`None`: discarded).
    pub log: Option<PathBuf>,
}

impl AnvilOptions {
    /// Instant mining on `port`, chain id 31337.
    pub fn on_port(port: u16) -> Self {
        Self { port, block_time: None, chain_id: 31337, log: None }
    }

    /// The RPC URL it will serve.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// A running Anvil. Dropping it kills the process unless it was [`Anvil::detach`]ed.
#[derive(Debug)]
pub struct Anvil {
    child: Option<Child>,
    url: String,
}

impl Anvil {
    /// Starts Anvil and waits (≤ 20 s) until it accepts connections.
    pub fn spawn(options: &AnvilOptions) -> Result<Self, ChainError> {
        let program = foundry_tool("anvil")?;
        let mut command = Command::new(&program);
        command
            .args(["--host", "127.0.0.1", "--port", &options.port.to_string()])
            .args(["--chain-id", &options.chain_id.to_string()])
            .stdin(Stdio::null());
        if let Some(seconds) = options.block_time {
            command.args(["--block-time", &seconds.to_string()]);
        }
        match &options.log {
            Some(path) => {
                let file =
                    std::fs::File::create(path).map_err(|e| ChainError::Tool(format!("{}: {e}", path.display())))?;
                let err = file.try_clone().map_err(|e| ChainError::Tool(e.to_string()))?;
                command.stdout(file).stderr(err);
            }
            None => {
                command.stdout(Stdio::null()).stderr(Stdio::null());
            }
        }
        let child = command.spawn().map_err(|e| ChainError::Tool(format!("starting {}: {e}", program.display())))?;
        let mut anvil = Self { child: Some(child), url: options.url() };
        let addr = SocketAddr::from(([127, 0, 0, 1], options.port));
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(anvil);
            }
            if let Some(child) = anvil.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                return Err(ChainError::Tool(format!(
                    "anvil exited at start ({status}); is port {} free?",
                    options.port
                )));
            }
            if Instant::now() > deadline {
                return Err(ChainError::Tool(format!("anvil did not listen on {addr} within 20 s")));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Its RPC URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Leaves the process running after this value is dropped (a testnet stops it by pid).
    pub fn detach(mut self) -> u32 {
        self.child.take().map(|c| c.id()).unwrap_or_default()
    }
}

impl Drop for Anvil {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
