//! Starting `engram serve --http` for a test: the process, killed when dropped, and the
//! JSON line it prints once it listens (`listening`, `repos`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A child process killed and reaped when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Spawn `cmd` (an `engram … serve --http 127.0.0.1:0 …`), wait for its first line of
/// output and return the server with that line and its base URL (`http://ADDR`).
pub fn start(cmd: &mut Command) -> (Killed, serde_json::Value, String) {
    start_logging(cmd, Stdio::null())
}

/// [`start`], with the server's log (stderr) going to `log`.
pub fn start_logging(cmd: &mut Command, log: Stdio) -> (Killed, serde_json::Value, String) {
    let mut child = cmd.stdout(Stdio::piped()).stderr(log).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Killed(child);
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).unwrap();
    let listening: serde_json::Value =
        serde_json::from_str(&first).unwrap_or_else(|e| panic!("{e}: {first:?}"));
    let base = format!("http://{}", listening["listening"].as_str().unwrap());
    (server, listening, base)
}
