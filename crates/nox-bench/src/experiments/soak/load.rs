//! The load of a soak run: background packets at a fixed rate, the exits' sink that counts
//! their deliveries, the client's request workers and the HTTP server they fetch from.

use super::*;

/// Background packets at `rate`, each with its sequence number, until stopped.
pub(super) async fn background(dir: PathBuf, rate: f64, load: Arc<Load>) {
    let Ok(mut client) = testnet::TestnetClient::connect(&dir) else {
        load.background_send_errors.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let started = Instant::now();
    let mut refreshed = Instant::now();
    let mut payload = [0u8; 64];
    payload[..8].copy_from_slice(BACKGROUND);
    for seq in 0u64.. {
        if load.stop.load(Ordering::Relaxed) {
            break;
        }
        // New epoch keys; while the directory is down the last topology stays in use.
        if refreshed.elapsed() > Duration::from_secs(10) {
            // Bounded: with the chain's RPC frozen the registry read would wait for it.
            let _ = tokio::time::timeout(Duration::from_secs(2), client.refresh(&dir)).await;
            refreshed = Instant::now();
        }
        payload[8..16].copy_from_slice(&seq.to_be_bytes());
        if let Ok(mut sent) = load.background_sent.lock() {
            sent.push(load.now() as f32);
        }
        let sent = match client.build(&payload) {
            Ok((entry, packet)) => tokio::time::timeout(Duration::from_millis(500), client.send(&entry, packet))
                .await
                .is_ok_and(|r| r.is_ok()),
            Err(_) => false,
        };
        if !sent {
            load.background_send_errors.fetch_add(1, Ordering::Relaxed);
        }
        let due = started + Duration::from_secs_f64((seq + 1) as f64 / rate);
        tokio::time::sleep_until(due.into()).await;
    }
}

/// Counts what the exits deliver: background sequence numbers and probe ids.
pub(super) async fn sink_reader(socket: std::net::UdpSocket, load: Arc<Load>) {
    let Ok(socket) = socket.set_nonblocking(true).and_then(|()| tokio::net::UdpSocket::from_std(socket)) else {
        return;
    };
    let mut buf = [0u8; 128];
    while let Ok(n) = socket.recv(&mut buf).await {
        if n < 16 {
            continue;
        }
        let value = u64::from_be_bytes(buf[8..16].try_into().unwrap_or_default());
        if &buf[..8] == BACKGROUND {
            if let (Ok(mut delivered), Ok(index)) = (load.background_delivered.lock(), usize::try_from(value)) {
                if delivered.len() <= index {
                    delivered.resize(index + 1, 0);
                }
                delivered[index] = delivered[index].saturating_add(1);
            }
        } else if &buf[..8] == PROBE
            && let Ok(mut probes) = load.probes_delivered.lock()
        {
            *probes.entry(value).or_insert(0) += 1;
        }
    }
}

/// One client request at a time: `GET /soak/<id>`, a reply of `reply_bytes`.
pub(super) async fn request_worker(
    handle: nox_client::ClientHandle,
    server: SocketAddr,
    reply_bytes: usize,
    next_id: Arc<AtomicU64>,
    load: Arc<Load>,
) {
    while !load.stop.load(Ordering::Relaxed) {
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        let body = RequestBody::Http(HttpRequestMsg {
            method: "GET".into(),
            url: format!("http://{server}/soak/{id}"),
            headers: vec![],
            body: vec![],
        });
        let sent_at = load.now();
        let started = Instant::now();
        let ok = match handle.request(body, reply_bytes + 512).await {
            Ok(response) if response.status == Status::Ok => {
                HttpResponseMsg::decode(&response.body).is_ok_and(|r| r.body.len() == reply_bytes)
            }
            _ => false,
        };
        let rtt = ok.then(|| round3(started.elapsed().as_secs_f64() * 1e3));
        if let Ok(mut requests) = load.requests.lock() {
            requests.push((id, sent_at, rtt));
        }
    }
}

/// The HTTP server the exits fetch from: records every `/soak/<id>` it answers.
pub(super) fn http_server(
    listener: std::net::TcpListener,
    reply_bytes: usize,
    load: Arc<Load>,
) -> Result<(), BenchError> {
    let body = Arc::new(vec![0x5a; reply_bytes]);
    testnet::servers::http_server_with(listener, move |path| {
        let id: Option<u64> = path.strip_prefix("/soak/").and_then(|i| i.parse().ok());
        if let (Some(id), Ok(mut served)) = (id, load.served.lock()) {
            served.insert(id);
        }
        let body = id.map(|_| body.clone());
        async move { body }
    })
    .map_err(err)?;
    Ok(())
}
