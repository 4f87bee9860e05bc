//! The faults of a soak run: whether `tc netem` is usable here, the schedule of node kills
//! and directory/RPC outages, and applying one fault to the running testnet.

use super::*;

/// Whether `tc netem` can be used here (root, `ip`, `tc` and the kernel's `sch_netem`): tried
/// in a throw-away network namespace.
pub(super) fn probe_netem() -> Value {
    use std::process::Command;
    let ns = format!("nox-soak-probe-{}", std::process::id());
    let ok = |c: &mut Command| {
        c.output().map(|o| (o.status.success(), String::from_utf8_lossy(&o.stderr).trim().to_owned()))
    };
    match ok(Command::new("ip").args(["netns", "add", &ns])) {
        Ok((true, _)) => {}
        Ok((false, e)) => return json!({ "status": "unavailable", "reason": format!("ip netns add: {e}") }),
        Err(e) => return json!({ "status": "unavailable", "reason": format!("ip: {e}") }),
    }
    let tried = ok(Command::new("ip")
        .args(["netns", "exec", &ns, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"]));
    let _ = ok(Command::new("ip").args(["netns", "del", &ns]));
    match tried {
        Ok((true, _)) => {
            json!({ "status": "available (not used: loopback TCP turns netem loss into retransmission delay)" })
        }
        Ok((false, e)) => json!({ "status": "unavailable", "reason": format!("tc qdisc add … netem: {e}") }),
        Err(e) => json!({ "status": "unavailable", "reason": format!("tc: {e}") }),
    }
}

/// Kills in turn over the layers (entry, mix, exit, entry, …), one every `kill_every`
/// seconds, plus the directory and RPC outages; sorted by time.
pub(super) fn schedule(
    nodes: &[testnet::NodeEntry],
    seconds: u64,
    kill_every: u64,
    directory_down: u64,
    rpc_down: u64,
    has_chain: bool,
) -> Vec<(u64, Fault)> {
    let layers = nodes.iter().map(|n| n.layer).max().map_or(0, |l| usize::from(l) + 1);
    let by_layer: Vec<Vec<usize>> =
        (0..layers).map(|l| (0..nodes.len()).filter(|&i| usize::from(nodes[i].layer) == l).collect()).collect();
    let rotation: Vec<usize> = (0..nodes.len())
        .filter_map(|k| by_layer.get(k % layers.max(1)).and_then(|layer| layer.get(k / layers.max(1))).copied())
        .collect();
    let mut plan = Vec::new();
    let mut at = kill_every;
    let mut k = 0;
    while at + 5 < seconds && !rotation.is_empty() {
        plan.push((at, Fault::KillNode(rotation[k % rotation.len()])));
        at += kill_every;
        k += 1;
    }
    let directory_at = seconds * 3 / 10;
    plan.push((directory_at, Fault::DirectoryDown));
    plan.push(((directory_at + directory_down).min(seconds), Fault::DirectoryUp));
    if has_chain {
        let rpc_at = seconds * 65 / 100;
        plan.push((rpc_at, Fault::RpcDown));
        plan.push(((rpc_at + rpc_down).min(seconds), Fault::RpcUp));
    }
    plan.sort_by_key(|(at, _)| *at);
    plan
}

/// The testnet the faults apply to: its state directory, the `nox` binary that restarts its
/// processes, its nodes and their link keys (index order).
pub(super) struct Target<'a> {
    pub(super) dir: &'a Path,
    pub(super) exe: &'a Path,
    pub(super) nodes: &'a [testnet::NodeEntry],
    pub(super) link_keys: &'a [nox_link::LinkPublicKey],
}

pub(super) async fn apply(
    fault: &Fault,
    target: &Target<'_>,
    probe_client: &mut testnet::TestnetClient,
    load: &Arc<Load>,
    log: &mut Log,
) {
    let Target { dir, exe, nodes, link_keys } = *target;
    let at = round3(load.now());
    let blocking = |f: Box<dyn FnOnce() -> Result<String, String> + Send>| async move {
        tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| Err(e.to_string()))
    };
    match *fault {
        Fault::KillNode(index) => {
            let layer = nodes.get(index).map_or(0, |n| n.layer);
            // An entry is sent a packet before its crash and the same bytes after its restart.
            let target = link_keys.get(index).copied();
            let probe = match target {
                Some(target) if layer == 0 => Some(probe_before(probe_client, target, load).await),
                _ => None,
            };
            let (dir2, exe2) = (dir.to_path_buf(), exe.to_path_buf());
            let started = Instant::now();
            let result = blocking(Box::new(move || {
                testnet::kill_node(&dir2, index)?;
                testnet::restart_with(&dir2, index, &exe2).map(|()| String::new())
            }))
            .await;
            let back_s = round3(started.elapsed().as_secs_f64());
            let mut event =
                json!({ "t_s": at, "fault": "sigkill+restart", "node": index, "layer": layer, "back_after_s": back_s });
            if let Err(e) = &result {
                log.failures.push(format!("node-{index} did not come back: {e}"));
                event["error"] = json!(e);
            }
            match probe {
                Some(probe) if result.is_ok() => {
                    event["replay_probe"] = probe_after(probe_client, nodes, index, probe, load, log).await;
                }
                Some(_) => event["replay_probe"] = json!({ "checked": false, "reason": "the node did not come back" }),
                None => {}
            }
            println!("soak t={at:.0}s: {event}");
            log.events.push(event);
        }
        Fault::DirectoryDown => {
            let killed = nox_testnet::directory::kill(dir);
            log.events.push(json!({ "t_s": at, "fault": "directory sigkill", "was_running": killed }));
            println!("soak t={at:.0}s: directory SIGKILLed");
        }
        Fault::DirectoryUp => {
            let (dir2, exe2) = (dir.to_path_buf(), exe.to_path_buf());
            let result =
                blocking(Box::new(move || nox_testnet::directory::restart(&dir2, &exe2).map(|a| a.to_string()))).await;
            if let Err(e) = &result {
                log.failures.push(format!("the directory did not come back: {e}"));
            }
            log.events.push(json!({ "t_s": at, "fault": "directory restarted", "ok": result.is_ok() }));
            println!("soak t={at:.0}s: directory restarted: {result:?}");
        }
        Fault::RpcDown | Fault::RpcUp => {
            let signal = if matches!(fault, Fault::RpcDown) { "STOP" } else { "CONT" };
            let done = testnet::signal_process(&nox_testnet::chain::process_dir(dir), signal);
            log.events.push(json!({ "t_s": at, "fault": format!("chain RPC SIG{signal}"), "ok": done }));
            println!("soak t={at:.0}s: Anvil SIG{signal}: {done}");
        }
    }
}
