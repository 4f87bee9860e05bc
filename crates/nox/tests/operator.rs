//! `nox deploy` and `nox operator` on a fresh Anvil (issue 33): deterministic CREATE2 deployment
//! (the committed `deployments/31337.json` reproduced; a second run sends nothing; another
//! chain id gives the same addresses), three operators with their own v3 keystores register
//! from the `anvil` preset, `status` shows them, one unstakes and withdraws after the delay
//! (Anvil time travel), operator 1 earns a fee by submitting a bundle a payer signed through the
//! Erc20Payment plugin (the executor credits it) and `claim` moves it, a wrong passphrase is named.
//! Run under the e2e lock: `flock /tmp/nox-e2e.lock cargo test -p nox --test operator`.

use std::path::Path;
use std::process::Command;

use alloy::primitives::Bytes;
use alloy::providers::{Provider, ProviderBuilder};
use alloy::signers::Signer;
use alloy::sol_types::SolValue;
use nox_chain::anvil::{Anvil, AnvilOptions, DEV_KEY};
use nox_chain::bindings::{BatchExecutor, Erc20Payment, NoxStakeToken};
use nox_chain::{Address, RegistryReader, U256};

alloy::sol! {
    /// `Erc20Payment.PaymentData`: a bundle's `paymentData` through the plugin is its ABI encoding.
    struct PaymentData {
        address payer;
        address asset;
        uint256 fee;
        uint256 nonce;
        uint256 deadline;
        bytes signature;
    }
}
use nox_operator::DeploymentRecord;

mod common;

use common::{NOX, free_port, nox_in as nox, runtime};

fn ok(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let (success, out, err) = nox(dir, args, env);
    assert!(success, "nox {args:?} failed:\n{out}\n{err}");
    out
}

fn repo_deployments() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deployments")
}

#[test]
fn deploy_register_status_unstake_withdraw_claim() {
    let anvil = Anvil::spawn(&AnvilOptions::on_port(free_port())).expect("anvil");
    let other = Anvil::spawn(&AnvilOptions { chain_id: 1337, ..AnvilOptions::on_port(free_port()) }).expect("anvil");
    let rpc = anvil.url().to_owned();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("pass"), "deployer passphrase\n").unwrap();
    std::fs::write(dir.join("dev.key"), DEV_KEY).unwrap();
    let pw = ["--password-file", "pass"];

    // The deployer's key, imported into a keystore (the hex file is only this test's input).
    let out = ok(
        dir,
        &["operator", "new-key", "--keystore", "deployer.json", pw[0], pw[1], "--import-key-file", "dev.key"],
        &[],
    );
    assert!(out.contains("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"), "{out}");

    // Deterministic deployment: the committed record, reproduced on a fresh Anvil.
    let deploy = ["deploy", "--rpc", &rpc, "--keystore", "deployer.json", pw[0], pw[1], "--deployments", "deployments"];
    let first = ok(dir, &deploy, &[]);
    assert!(first.contains("deployed registry"), "{first}");
    let written = std::fs::read_to_string(dir.join("deployments/31337.json")).unwrap();
    let committed = std::fs::read_to_string(repo_deployments().join("31337.json")).unwrap();
    assert_eq!(
        written, committed,
        "deployments/31337.json is not what `nox deploy` writes on a fresh Anvil (a contract's bytecode changed?): \
         regenerate it as deployments/README.md says"
    );
    let record = DeploymentRecord::from_json(&written).unwrap();
    assert!(record.contracts.pool.is_some());
    // A second run is a no-op: nothing sent, the same record.
    let before = block_number(&rpc);
    let second = ok(dir, &deploy, &[]);
    assert!(second.contains("nothing to deploy"), "{second}");
    assert_eq!(block_number(&rpc), before, "the second deployment sent transactions");
    assert_eq!(std::fs::read_to_string(dir.join("deployments/31337.json")).unwrap(), written);
    // Another chain id: the same addresses.
    let other_rpc = other.url().to_owned();
    let deploy_other =
        ["deploy", "--rpc", &other_rpc, "--keystore", "deployer.json", pw[0], pw[1], "--deployments", "deployments"];
    ok(dir, &deploy_other, &[]);
    let on_1337 = DeploymentRecord::load(&dir.join("deployments/1337.json")).unwrap();
    assert_eq!(on_1337.chain_id, 1337);
    assert_eq!(on_1337.contracts, record.contracts, "CREATE2 addresses differ between chains");

    // Three operators, each with its own keystore and passphrase source.
    let rt = runtime();
    let deployer = nox_chain::deploy::signer(DEV_KEY).unwrap();
    let stake = record.params.min_stake;
    let mut operators = Vec::new();
    for i in 1..=3u16 {
        let ks = format!("op{i}.json");
        let pass = format!("operator {i} passphrase");
        std::fs::write(dir.join(format!("pass{i}")), &pass).unwrap();
        let pf = format!("pass{i}");
        // Operator 2 gives its passphrase through the environment, the others through a file.
        let (args, env): (Vec<&str>, Vec<(&str, &str)>) = if i == 2 {
            (vec!["--keystore", &ks], vec![("NOX_OPERATOR_PASSWORD", pass.as_str())])
        } else {
            (vec!["--keystore", &ks, "--password-file", &pf], vec![])
        };
        let mut new_key = vec!["operator", "new-key"];
        new_key.extend(&args);
        let out = ok(dir, &new_key, &env);
        let address: Address = out.split_whitespace().nth(1).unwrap().parse().unwrap();
        rt.block_on(nox_chain::deploy::fund(
            &rpc,
            &record.deployment(),
            &deployer,
            address,
            U256::from(10u64).pow(U256::from(18u64)),
            stake,
        ))
        .unwrap();
        let node = format!("node{i}");
        let listen = format!("127.0.0.1:{}", 9100 + i);
        ok(
            dir,
            &[
                "operator",
                "init",
                "--chain",
                "anvil",
                "--rpc",
                &rpc,
                "--dir",
                &node,
                "--listen",
                &listen,
                "--directory",
                "http://127.0.0.1:1",
            ],
            &[],
        );
        let config = std::fs::read_to_string(dir.join(&node).join("node.toml")).unwrap();
        assert!(config.contains(&record.contracts.registry.to_string()), "{config}");
        let mut register = vec![
            "operator",
            "register",
            "--chain",
            "anvil",
            "--rpc",
            &rpc,
            "--node-dir",
            &node,
            "--address",
            &listen,
            "--yes",
        ];
        register.extend(&args);
        let out = ok(dir, &register, &env);
        assert!(out.contains("stake") && out.contains("gas") && out.contains("registered"), "{out}");
        operators.push((
            address,
            args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            env.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>(),
        ));
    }
    let owned = |v: &Vec<String>| v.iter().map(String::as_str).collect::<Vec<_>>().join("\u{0}");
    let run = |sub: &[&str], op: &(Address, Vec<String>, Vec<(String, String)>)| {
        let key_args = owned(&op.1);
        let mut args: Vec<&str> = sub.to_vec();
        args.extend(["--chain", "anvil", "--rpc", rpc.as_str()]);
        args.extend(key_args.split('\u{0}'));
        let env: Vec<(&str, &str)> = op.2.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        nox(dir, &args, &env)
    };

    // The registry lists all three; `status` shows each.
    let now = block_number(&rpc);
    let snapshot = rt
        .block_on(async {
            RegistryReader::connect(&rpc, record.contracts.registry, Some(31337)).await.unwrap().snapshot_at(now).await
        })
        .unwrap();
    assert_eq!(snapshot.nodes.len(), 3);
    for (i, op) in operators.iter().enumerate() {
        let (success, out, err) = run(&["operator", "status"], op);
        assert!(success, "{err}");
        assert!(out.contains("status   active") && out.contains(&format!("127.0.0.1:{}", 9101 + i)), "{out}");
    }

    // A wrong passphrase is named as such.
    std::fs::write(dir.join("wrong"), "not it").unwrap();
    let (success, _, err) = nox(
        dir,
        &[
            "operator",
            "unstake",
            "--chain",
            "anvil",
            "--rpc",
            &rpc,
            "--keystore",
            "op3.json",
            "--password-file",
            "wrong",
        ],
        &[],
    );
    assert!(!success && err.contains("wrong passphrase"), "{err}");

    // Operator 3 leaves: out of the list at once, the stake only after the delay.
    let op3 = &operators[2];
    let (success, out, err) = run(&["operator", "unstake"], op3);
    assert!(success && out.contains("withdrawable"), "{out}{err}");
    let (_, out, _) = run(&["operator", "status"], op3);
    assert!(out.contains("unstaking"), "{out}");
    let (success, _, err) = run(&["operator", "withdraw"], op3);
    assert!(!success && err.contains("withdrawable from"), "withdrew before the delay: {err}");
    let tokens = |who: Address| {
        rt.block_on(async {
            let p = ProviderBuilder::new().connect_http(rpc.parse().unwrap());
            NoxStakeToken::new(record.contracts.stake_token, &p).balanceOf(who).call().await.unwrap()
        })
    };
    assert_eq!(tokens(op3.0), U256::ZERO);
    rt.block_on(async {
        let p = ProviderBuilder::new().connect_http(rpc.parse().unwrap());
        let _: serde_json::Value =
            p.raw_request("evm_increaseTime".into(), (record.params.unstake_delay + 1,)).await.unwrap();
        let _: serde_json::Value = p.raw_request("evm_mine".into(), ()).await.unwrap();
    });
    let (success, out, err) = run(&["operator", "withdraw"], op3);
    assert!(success, "{out}{err}");
    assert_eq!(tokens(op3.0), stake);
    let (_, out, _) = run(&["operator", "status"], op3);
    assert!(out.contains("not registered"), "{out}");

    // Operator 1 earns a reward the way a relayer does, nothing impersonated: it submits a bundle
    // whose fee (in the stake token) a payer signed for it through the Erc20Payment plugin; the
    // executor measures the fee arriving at the ledger and credits the submitter
    // (`BatchExecutor._execute`). Then `nox operator claim` moves it.
    let op1 = &operators[0];
    let reward = U256::from(12_345u64);
    rt.block_on(async {
        let token = record.contracts.stake_token;
        let plugin = record.contracts.erc20_payment;
        // The payer: the deployer's account (it holds stake tokens), approving the plugin.
        let payer = nox_chain::deploy::wallet_provider(&rpc, &deployer).unwrap();
        let approved = NoxStakeToken::new(token, &payer).approve(plugin, reward).send().await.unwrap();
        assert!(approved.get_receipt().await.unwrap().status());
        let reads = ProviderBuilder::new().connect_http(rpc.parse().unwrap());
        let executor = BatchExecutor::new(record.contracts.executor, &reads);
        let action_hash =
            executor.executionHash(Address::ZERO, Bytes::new(), reward, U256::ZERO).call().await.unwrap().raw;
        let (nonce, deadline) = (U256::from(7u64), U256::from(4_000_000_000u64));
        let digest = Erc20Payment::new(plugin, &reads)
            .paymentDigest(deployer.address(), token, reward, op1.0, action_hash, nonce, deadline)
            .call()
            .await
            .unwrap();
        let signature = deployer.sign_hash(&digest).await.unwrap().as_bytes();
        let payment = PaymentData {
            payer: deployer.address(),
            asset: token,
            fee: reward,
            nonce,
            deadline,
            signature: Bytes::copy_from_slice(&signature),
        };
        let bundle = BatchExecutor::Bundle {
            payment: plugin,
            paymentData: payment.abi_encode().into(),
            asset: token,
            fee: reward,
            action: BatchExecutor::Action {
                target: Address::ZERO,
                value: U256::ZERO,
                gas: U256::ZERO,
                data: Bytes::new(),
            },
        };
        // The relayer: operator 1's own key, from its keystore.
        let relayer = nox_operator::keystore::load(&dir.join("op1.json"), "operator 1 passphrase").unwrap();
        assert_eq!(relayer.address(), op1.0);
        let relayer = nox_chain::deploy::wallet_provider(&rpc, &relayer).unwrap();
        let sent = BatchExecutor::new(record.contracts.executor, &relayer).execute(bundle).send().await.unwrap();
        assert!(sent.get_receipt().await.unwrap().status(), "the paid bundle reverted");
    });
    let (_, out, _) = run(&["operator", "status"], op1);
    assert!(out.contains(&format!("reward   {reward} of {}", record.contracts.stake_token)), "{out}");
    let before = tokens(op1.0);
    let (success, out, err) = run(&["operator", "claim"], op1);
    assert!(success && out.contains("claimed 12345"), "{out}{err}");
    assert_eq!(tokens(op1.0), before + reward);
    let (success, _, err) = run(&["operator", "claim"], op1);
    assert!(!success && err.contains("no reward"), "{err}");
}

fn block_number(rpc: &str) -> u64 {
    let rt = runtime();
    rt.block_on(async { ProviderBuilder::new().connect_http(rpc.parse().unwrap()).get_block_number().await.unwrap() })
}

/// `nox node --chain anvil --rpc URL`: the preset's registry and chain id replace the config's
/// `[chain]`, whose operator key file and confirmations are kept.
#[test]
fn node_chain_section_from_preset() {
    let current = nox_chain::ChainConfig {
        rpc_urls: vec!["http://old:1".into()],
        registry: Address::ZERO,
        chain_id: 5,
        confirmations: 2,
        operator_key_file: Some("operator.key".into()),
    };
    let chain = nox::operator_cmd::chain_from_preset("anvil", Some("http://127.0.0.1:9545"), Some(current)).unwrap();
    let record = DeploymentRecord::load(&repo_deployments().join("31337.json")).unwrap();
    assert_eq!(chain.registry, record.contracts.registry);
    assert_eq!(chain.chain_id, 31337);
    assert_eq!(chain.rpc_urls, vec!["http://127.0.0.1:9545".to_owned()]);
    assert_eq!((chain.confirmations, chain.operator_key_file), (2, Some("operator.key".into())));
    assert!(nox::operator_cmd::chain_from_preset("no-such-chain", None, None).is_err());
}

/// Issue 33: a node from its keystore alone. `nox operator init --keystore … --password-file …`
/// writes a node.toml naming the operator keystore (never the key, never the passphrase);
/// `nox node --config node.toml` — no other flag — unlocks it, reads the registry, and refuses to
/// run before `nox operator register` (naming that command) or with a wrong passphrase; once
/// registered it passes the registry check and goes on to fetch its topology (from the directory
/// the config names, absent here, which is where this test stops).
#[test]
fn node_starts_from_its_keystore_config_alone() {
    let anvil = Anvil::spawn(&AnvilOptions::on_port(free_port())).expect("anvil");
    let rpc = anvil.url().to_owned();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("dev.key"), DEV_KEY).unwrap();
    std::fs::write(dir.join("pass"), "deployer passphrase\n").unwrap();
    std::fs::write(dir.join("op.pass"), "node operator passphrase\n").unwrap();
    let pw = ["--password-file", "pass"];
    ok(dir, &["operator", "new-key", "--keystore", "deployer.json", pw[0], pw[1], "--import-key-file", "dev.key"], &[]);
    ok(dir, &["deploy", "--rpc", &rpc, "--keystore", "deployer.json", pw[0], pw[1], "--no-pool"], &[]);
    let record = DeploymentRecord::load(&dir.join("deployments/31337.json")).unwrap();
    let out = ok(dir, &["operator", "new-key", "--keystore", "op.json", "--password-file", "op.pass"], &[]);
    let operator: Address = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    let rt = runtime();
    let deployer = nox_chain::deploy::signer(DEV_KEY).unwrap();
    rt.block_on(nox_chain::deploy::fund(
        &rpc,
        &record.deployment(),
        &deployer,
        operator,
        U256::from(10u64).pow(U256::from(18u64)),
        record.params.min_stake,
    ))
    .unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let chain = ["--chain", "31337", "--rpc", rpc.as_str()];
    let mut init = vec!["operator", "init", "--dir", "node", "--listen", &listen, "--directory", "http://127.0.0.1:1"];
    init.extend(chain);
    init.extend(["--keystore", "op.json", "--password-file", "op.pass"]);
    ok(dir, &init, &[]);
    let config = std::fs::read_to_string(dir.join("node/node.toml")).unwrap();
    assert!(config.contains("[operator]") && config.contains("op.json") && config.contains("op.pass"), "{config}");
    assert!(!config.contains("node operator passphrase"), "the passphrase itself is in node.toml");

    // Run from another directory, as a service would: the config's paths must hold on their own.
    let elsewhere = tempfile::tempdir().unwrap();
    let config_path = dir.join("node/node.toml");
    let node = || {
        let mut command = Command::new(NOX);
        command.current_dir(elsewhere.path()).args(["node", "--config"]).arg(&config_path);
        command.env_remove("NOX_OPERATOR_PASSWORD").env("NOX_LOG", "info");
        let out = command.output().expect("nox node runs");
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    };

    // Not registered yet: refused, naming the command that fixes it.
    let (success, err) = node();
    assert!(!success && err.contains("is not registered") && err.contains("nox operator register"), "{err}");

    // A wrong passphrase in the file the config names: refused as such.
    std::fs::write(dir.join("op.pass"), "not the passphrase\n").unwrap();
    let (success, err) = node();
    assert!(!success && err.contains("wrong passphrase"), "{err}");
    std::fs::write(dir.join("op.pass"), "node operator passphrase\n").unwrap();

    let mut register = vec!["operator", "register", "--node-dir", "node", "--address", &listen, "--yes"];
    register.extend(chain);
    register.extend(["--keystore", "op.json", "--password-file", "op.pass"]);
    ok(dir, &register, &[]);

    // Registered: the keystore unlocks, the registry vouches for the node, and it goes on to its
    // topology (the directory at 127.0.0.1:1 does not exist: the only failure left).
    let (success, err) = node();
    assert!(err.contains("registered and active in the node registry"), "{err}");
    assert!(err.contains(&operator.to_string()), "{err}");
    assert!(!success && err.contains("topology") && !err.contains("nox operator register"), "{err}");
}

/// docs/operating.md's command lines are the commands as they are: every `nox operator`, `nox
/// deploy`, `nox client`, `nox watch` and `nox wallet` line of its shell blocks, with `$CHAIN` and `$RPC` filled in, parses
/// with the binary's own argument parsers (a renamed flag or subcommand fails here), the `nox
/// node` line is the bare `--config` start the guide promises, and the systemd unit the guide
/// points to runs that same command.
#[test]
fn every_command_line_in_the_operator_guide_parses() {
    use clap::Parser;

    #[derive(Parser)]
    #[command(name = "nox")]
    enum Cli {
        #[command(subcommand)]
        Operator(nox::operator_cmd::OperatorCommand),
        Deploy(nox::operator_cmd::DeployArgs),
        Client(Box<nox::client_cmd::ClientArgs>),
        Watch(nox::watch_cmd::WatchArgs),
        #[command(subcommand)]
        Wallet(Box<nox::wallet_cmd::WalletCommand>),
    }

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let guide = std::fs::read_to_string(root.join("docs/operating.md")).unwrap();
    let mut in_shell = false;
    let mut parsed = Vec::new();
    for line in guide.lines() {
        if line.starts_with("```") {
            in_shell = line == "```sh";
            continue;
        }
        let line = line.trim();
        if !in_shell || !line.starts_with("nox ") {
            continue;
        }
        let filled = line.replace("$CHAIN", "anvil").replace("$RPC", "http://127.0.0.1:8545");
        let words: Vec<&str> = filled.split_whitespace().collect();
        match words[1] {
            "operator" | "deploy" | "client" | "watch" | "wallet" => {
                if let Err(e) = Cli::try_parse_from(&words) {
                    panic!("docs/operating.md: `{line}` does not parse:\n{e}");
                }
                parsed.push(format!("{} {}", words[1], words.get(2).unwrap_or(&"")));
            }
            "node" => assert_eq!(words[2..], ["--config", "/var/lib/nox/node.toml"], "{line}"),
            other => panic!("docs/operating.md: `nox {other}` is not checked here: add it to this test"),
        }
    }
    for sub in ["new-key", "init", "register", "status", "update", "rotate", "unstake", "withdraw", "claim"] {
        assert!(parsed.contains(&format!("operator {sub}")), "the guide shows no `nox operator {sub}`: {parsed:?}");
    }
    assert!(parsed.iter().any(|p| p.starts_with("deploy")) && parsed.iter().any(|p| p.starts_with("client")));
    let unit = std::fs::read_to_string(root.join("deploy/nox-node.service")).unwrap();
    assert!(unit.contains("\nExecStart=/usr/local/bin/nox node --config /var/lib/nox/node.toml\n"), "{unit}");
    for hardening in ["ProtectSystem=strict", "NoNewPrivileges=yes", "StateDirectory=nox\n", "LimitNOFILE="] {
        assert!(unit.contains(hardening), "deploy/nox-node.service lacks {hardening}");
    }
}
