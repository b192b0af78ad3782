//! Faults injected into the core itself (the `testing` feature), each
//! through a real koma-sim child.

mod common;

use common::{children_of_self, serial, sim_launch, Client};
use koma_transport::connection::Faults;
use koma_transport::{ConnectionOptions, ErrorCode, Outcome, Probe};

#[test]
fn a_panic_in_the_reader_fails_the_client_and_the_child_is_reaped() {
    let _serial = serial();
    let faults = Faults { panic_in_reader: true };
    let mut c = Client::with_options(ConnectionOptions { launch: sim_launch(&[]), faults, ..Default::default() });
    let t = c.conn.token();
    assert!(matches!(c.conn.probe(t, None).unwrap(), Probe::Wait));
    let Outcome::Error(e) = c.outcome(t) else { panic!("the probe resolved") };
    assert_eq!(e.code, ErrorCode::TransportFailure, "{}", e.message);
    assert!(e.message.contains("an internal error (a panic) in the client's reader task"), "{}", e.message);
    let later = c.conn.token();
    let refused = c.conn.request(later, "state", None, None).unwrap_err();
    assert_eq!(refused.code, ErrorCode::TransportFailure, "a later call fails at once");
    c.close();
    assert!(c.conn.is_closed());
    assert_eq!(children_of_self(), Vec::new(), "the child is reaped when close is done");
}
