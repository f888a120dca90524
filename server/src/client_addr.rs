//! The client's address behind reverse proxies: what the per-address read limit, the connection
//! cap and the logs count.
//!
//! The TCP peer is the client unless it is one of the configured `trusted_proxies`. Only then is
//! the forwarding header read (`X-Forwarded-For`, or `Forwarded` when configured so; never
//! both, since a proxy that maintains one passes the other through as the client wrote it), from
//! its rightmost hop leftwards: hops that are trusted proxies themselves are skipped, and the
//! first one that is not is the client. Everything left of it was written by the client and
//! is never believed. A hop that is not an IP address (`unknown`, an obfuscated name, garbage)
//! ends the walk at the last trusted hop, the nearest address known for sure.

use std::net::{IpAddr, SocketAddr};

use actix_web::http::header::HeaderMap;
use ipnet::IpNet;
use serde::{Deserialize, Serialize};

/// Which header the trusted proxies maintain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ForwardedHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2` (nginx's `$proxy_add_x_forwarded_for`).
    #[default]
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=client;proto=https, for="[2001:db8::1]:4711"`.
    Forwarded,
}

/// A trusted proxy: one address (`10.0.0.5`, `::1`) or a network (`10.0.0.0/8`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ProxyNet(pub IpNet);

impl std::str::FromStr for ProxyNet {
    type Err = String;
    fn from_str(s: &str) -> Result<ProxyNet, String> {
        let s = s.trim();
        s.parse::<IpNet>()
            .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
            .map(ProxyNet)
            .map_err(|_| format!("{s:?} is neither an IP address nor a CIDR network"))
    }
}

impl TryFrom<String> for ProxyNet {
    type Error = String;
    fn try_from(s: String) -> Result<ProxyNet, String> {
        s.parse()
    }
}

impl From<ProxyNet> for String {
    fn from(n: ProxyNet) -> String {
        n.0.to_string()
    }
}

/// The proxies whose forwarding header is believed (`trusted_proxies`, `forwarded_header`).
#[derive(Clone, Copy, Debug, Default)]
pub struct TrustedProxies<'a> {
    nets: &'a [ProxyNet],
    header: ForwardedHeader,
}

impl<'a> TrustedProxies<'a> {
    pub fn new(nets: &'a [ProxyNet], header: ForwardedHeader) -> TrustedProxies<'a> {
        TrustedProxies { nets, header }
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.nets.iter().any(|n| n.0.contains(&ip))
    }

    /// The client's address for a request from `peer` carrying `headers`.
    pub fn client(&self, peer: Option<SocketAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        let peer = canonical(peer?.ip());
        if !self.trusts(peer) {
            return Some(peer);
        }
        let hops: Vec<&str> = match self.header {
            ForwardedHeader::XForwardedFor => headers
                .get_all("x-forwarded-for")
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .collect(),
            ForwardedHeader::Forwarded => headers
                .get_all("forwarded")
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .map(forwarded_for)
                .collect(),
        };
        let mut client = peer;
        for hop in hops.iter().rev() {
            match parse_hop(hop) {
                Some(ip) if self.trusts(ip) => client = ip,
                Some(ip) => return Some(ip),
                None => break,
            }
        }
        Some(client)
    }
}

/// An IPv4 address seen as `::ffff:a.b.c.d` (a dual-stack socket) is that IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// The `for=` value of one `Forwarded` element (`for=1.2.3.4;proto=https`), or "" without one.
fn forwarded_for(element: &str) -> &str {
    element
        .split(';')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("for"))
        .map_or("", |(_, v)| v.trim())
}

/// One hop as an address: `1.2.3.4`, `1.2.3.4:5678`, `2001:db8::1`, `"[2001:db8::1]:4711"`.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim().trim_matches('"');
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(canonical(ip));
    }
    if let Ok(sa) = hop.parse::<SocketAddr>() {
        return Some(canonical(sa.ip()));
    }
    // `[v6]` without a port.
    hop.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .and_then(|h| h.parse::<IpAddr>().ok())
        .map(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        h
    }

    fn peer(s: &str) -> Option<SocketAddr> {
        Some(SocketAddr::new(s.parse().unwrap(), 40000))
    }

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    fn proxies(header: ForwardedHeader) -> TrustedProxies<'static> {
        let nets: Vec<ProxyNet> = vec!["10.0.0.0/8".parse().unwrap(), "::1".parse().unwrap()];
        TrustedProxies::new(nets.leak(), header)
    }

    /// From a peer that is not a trusted proxy, forwarding headers are ignored, whatever they say.
    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_claims() {
        let p = proxies(ForwardedHeader::XForwardedFor);
        let h = headers(&[("x-forwarded-for", "1.1.1.1"), ("forwarded", "for=2.2.2.2")]);
        assert_eq!(p.client(peer("192.0.2.7"), &h), ip("192.0.2.7"));
        let none = TrustedProxies::default();
        assert_eq!(none.client(peer("10.0.0.1"), &h), ip("10.0.0.1"));
    }

    /// Through trusted proxies: the rightmost hop that is not a trusted proxy, never what the
    /// client prepended; several header lines read as one list.
    #[test]
    fn the_rightmost_untrusted_hop_is_the_client() {
        let p = proxies(ForwardedHeader::XForwardedFor);
        let h = headers(&[("x-forwarded-for", "6.6.6.6, 203.0.113.9, 10.1.1.1")]);
        assert_eq!(p.client(peer("10.0.0.2"), &h), ip("203.0.113.9"));
        let split = headers(&[
            ("x-forwarded-for", "6.6.6.6"),
            ("x-forwarded-for", "203.0.113.9"),
        ]);
        assert_eq!(p.client(peer("10.0.0.2"), &split), ip("203.0.113.9"));
        // No header: the proxy itself.
        assert_eq!(p.client(peer("10.0.0.2"), &headers(&[])), ip("10.0.0.2"));
        // All hops trusted: the leftmost of them.
        let inner = headers(&[("x-forwarded-for", "10.9.9.9, 10.1.1.1")]);
        assert_eq!(p.client(peer("10.0.0.2"), &inner), ip("10.9.9.9"));
        // Garbage ends the walk at the nearest known address.
        let junk = headers(&[("x-forwarded-for", "203.0.113.9, nonsense, 10.1.1.1")]);
        assert_eq!(p.client(peer("10.0.0.2"), &junk), ip("10.1.1.1"));
        // A mapped IPv4 peer is its IPv4 address; ports are dropped.
        let ported = headers(&[("x-forwarded-for", "203.0.113.9:5555")]);
        assert_eq!(
            p.client(peer("::ffff:10.0.0.2"), &ported),
            ip("203.0.113.9")
        );
        // The other header is not read.
        let other = headers(&[("forwarded", "for=203.0.113.9")]);
        assert_eq!(p.client(peer("10.0.0.2"), &other), ip("10.0.0.2"));
    }

    /// RFC 7239: `for=` among other parameters, quoted IPv6 with a port, `unknown`.
    #[test]
    fn forwarded_elements_are_read_per_rfc_7239() {
        let p = proxies(ForwardedHeader::Forwarded);
        let h = headers(&[(
            "forwarded",
            "for=6.6.6.6, for=\"[2001:db8::1]:4711\";proto=https, proto=https;for=10.1.1.1",
        )]);
        assert_eq!(p.client(peer("::1"), &h), ip("2001:db8::1"));
        let unknown = headers(&[("forwarded", "for=unknown, for=10.1.1.1")]);
        assert_eq!(p.client(peer("::1"), &unknown), ip("10.1.1.1"));
        let xff = headers(&[("x-forwarded-for", "203.0.113.9")]);
        assert_eq!(p.client(peer("::1"), &xff), ip("::1"));
    }
}
