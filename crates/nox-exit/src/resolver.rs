//! Injectable name resolution and connection set-up.
//!
//! The exit resolves a host exactly once per hop through a [`Resolver`], checks every address it
//! returns, and then hands only checked addresses to a [`Dialer`]. A dialer never sees a host
//! name, so it cannot resolve again: that is what pins a connection to the checked address.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;

use tokio::net::TcpStream;

/// A boxed, `Send` future (the traits below are object-safe so they can sit behind `Arc<dyn _>`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Resolves a host name to socket addresses.
pub trait Resolver: Send + Sync {
    /// All addresses for `host`, with `port` filled in.
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>>;
}

/// The system resolver (`tokio::net::lookup_host`, i.e. `getaddrinfo` on a blocking thread).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>> {
        Box::pin(async move { tokio::net::lookup_host((host, port)).await.map(Iterator::collect) })
    }
}

/// Opens a TCP connection to an already checked address.
pub trait Dialer: Send + Sync {
    /// Connect to exactly `addr`.
    fn dial(&self, addr: SocketAddr) -> BoxFuture<'_, io::Result<TcpStream>>;
}

/// Plain `TcpStream::connect` with `TCP_NODELAY`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpDialer;

impl Dialer for TcpDialer {
    fn dial(&self, addr: SocketAddr) -> BoxFuture<'_, io::Result<TcpStream>> {
        Box::pin(async move {
            let stream = TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            Ok(stream)
        })
    }
}
