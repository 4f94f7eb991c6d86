//! The stdio transport: the SDK's line transport, with a request line over the limit
//! answered rather than dropped.
//!
//! The SDK reads one JSON-RPC message a line and drops a line over its limit with a
//! log line only, so a client that sent one waits forever for the answer. Here stdin
//! passes through [`BoundedLines`], which cuts such a line off at the limit (it never
//! holds more of it), ends what it passed on with bytes no JSON parser accepts (the
//! SDK ignores unparsable lines), skips the rest, and reports it; the transport then
//! writes a JSON-RPC error (`-32600`, `"id": null`, as JSON-RPC 2.0 says for a
//! request whose id cannot be read) naming the limit, and goes on serving.
//!
//! Every line written goes through one writer task, so the error line never lands
//! inside a response the SDK is writing.
//!
//! Owns: stdin and stdout of `engram serve`. Must never hold more than the limit of
//! one line, nor write anything but whole JSON-RPC lines to stdout.

use std::borrow::Cow;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

/// The longest request line the stdio server reads: the SDK's own default, which
/// matches its HTTP transport's largest event.
pub const MAX_REQUEST_LINE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// What ends the part of an oversized line passed on: a NUL is no JSON outside a
/// string and no raw control character is allowed inside one, so the SDK's parser
/// refuses the line whatever its prefix held.
const CUT: &[u8] = b"\0\n";

/// Bytes read from the input at a time.
const READ_CHUNK: usize = 64 << 10;

/// The server's stdio transport; see the module doc.
pub struct StdioTransport {
    inner: AsyncRwTransport<RoleServer, BoundedLines<tokio::io::Stdin>, LineSink>,
    oversized: UnboundedReceiver<()>,
    out: Option<UnboundedSender<Vec<u8>>>,
    writer: Option<JoinHandle<()>>,
    limit: usize,
}

impl StdioTransport {
    /// A transport over this process's stdin and stdout, with request lines of at
    /// most `limit` bytes. Must be called within the Tokio runtime (it spawns the
    /// writer task).
    pub fn new(limit: usize) -> StdioTransport {
        let (lines, queued) = unbounded_channel();
        let writer = tokio::spawn(write_lines(queued, tokio::io::stdout()));
        let (events, oversized) = unbounded_channel();
        let reader = BoundedLines::new(tokio::io::stdin(), limit, events);
        let sink = LineSink {
            partial: Vec::new(),
            out: lines.clone(),
        };
        StdioTransport {
            // The cut part of an oversized line is `limit` bytes and `CUT`.
            inner: AsyncRwTransport::new_server(reader, sink)
                .with_max_line_length(limit.saturating_add(CUT.len())),
            oversized,
            out: Some(lines),
            writer: Some(writer),
            limit,
        }
    }

    fn reply_oversized(&self) {
        let reply = oversized_reply(self.limit);
        tracing::warn!(
            limit = self.limit,
            "an MCP request line was over the limit; answered with an error"
        );
        if let Some(out) = &self.out {
            let _ = out.send(reply);
        }
    }
}

/// The error line for a request over `limit` bytes.
pub fn oversized_reply(limit: usize) -> Vec<u8> {
    let message = format!(
        "request line longer than {limit} bytes, the server's limit ({} MiB): it was \
         discarded unread; send smaller requests (pass large content by file path)",
        limit >> 20
    );
    let mut line = serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32600, "message": message, "data": {"max_line_bytes": limit}},
    }))
    .unwrap_or_default();
    line.push(b'\n');
    line
}

impl Transport<RoleServer> for StdioTransport {
    type Error = io::Error;

    fn name() -> Cow<'static, str> {
        "engram-stdio".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // Both are cancel-safe: the SDK polls `receive` inside a `select!`.
            tokio::select! {
                biased;
                Some(()) = self.oversized.recv() => self.reply_oversized(),
                message = self.inner.receive() => return message,
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The SDK's writer (and its sink's sender) goes first, then ours: the writer
        // task ends once it has written every line queued.
        self.inner.close().await?;
        self.out = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.await;
        }
        Ok(())
    }
}

/// Write each queued line to `out`, flushed, until every sender is gone.
async fn write_lines(mut queued: UnboundedReceiver<Vec<u8>>, mut out: impl AsyncWrite + Unpin) {
    while let Some(line) = queued.recv().await {
        if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
            // The client is gone; nothing more can reach it.
            return;
        }
    }
}

/// The SDK's writer: each whole line it writes is queued for the writer task.
struct LineSink {
    partial: Vec<u8>,
    out: UnboundedSender<Vec<u8>>,
}

impl AsyncWrite for LineSink {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let mut rest = data;
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            let mut line = std::mem::take(&mut this.partial);
            line.extend_from_slice(&rest[..=i]);
            if this.out.send(line).is_err() {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "stdout is closed",
                )));
            }
            rest = &rest[i + 1..];
        }
        this.partial.extend_from_slice(rest);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// A reader that passes lines of at most `limit` bytes (the `\n` not counted)
/// through, and a longer one as its first bytes, then [`CUT`], reporting it on
/// `events` and skipping the rest of it unread into memory.
pub struct BoundedLines<R> {
    input: R,
    buf: Box<[u8]>,
    pos: usize,
    len: usize,
    /// Bytes of the current line passed on so far.
    line: usize,
    limit: usize,
    /// Skipping the rest of an oversized line.
    discarding: bool,
    /// Bytes to pass on before any other.
    inject: &'static [u8],
    events: UnboundedSender<()>,
}

impl<R> BoundedLines<R> {
    pub fn new(input: R, limit: usize, events: UnboundedSender<()>) -> BoundedLines<R> {
        BoundedLines {
            input,
            buf: vec![0; READ_CHUNK].into_boxed_slice(),
            pos: 0,
            len: 0,
            line: 0,
            limit,
            discarding: false,
            inject: &[],
            events,
        }
    }

    /// Pass on what the buffer holds, into `out`, up to an oversized line's cut.
    fn pass_on(&mut self, out: &mut ReadBuf<'_>) {
        while self.pos < self.len && out.remaining() > 0 {
            let rest = &self.buf[self.pos..self.len];
            let newline = rest.iter().position(|&b| b == b'\n');
            if self.discarding {
                match newline {
                    Some(i) => {
                        self.pos += i + 1;
                        self.discarding = false;
                        self.line = 0;
                    }
                    None => self.pos = self.len,
                }
                continue;
            }
            let body = newline.unwrap_or(rest.len());
            if self.line + body > self.limit {
                self.discarding = true;
                self.line = 0;
                self.inject = CUT;
                let _ = self.events.send(());
                return;
            }
            let whole = body + usize::from(newline.is_some());
            let take = whole.min(out.remaining());
            out.put_slice(&rest[..take]);
            self.pos += take;
            self.line = if take == whole && newline.is_some() {
                0
            } else {
                self.line + take
            };
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if out.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            if !this.inject.is_empty() {
                let n = this.inject.len().min(out.remaining());
                out.put_slice(&this.inject[..n]);
                this.inject = &this.inject[n..];
                return Poll::Ready(Ok(()));
            }
            if this.pos == this.len {
                let mut read = ReadBuf::new(&mut this.buf);
                ready!(Pin::new(&mut this.input).poll_read(cx, &mut read))?;
                this.len = read.filled().len();
                this.pos = 0;
                if this.len == 0 {
                    // The end of the input.
                    return Poll::Ready(Ok(()));
                }
            }
            let before = out.filled().len();
            this.pass_on(out);
            if out.filled().len() > before {
                return Poll::Ready(Ok(()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn pass(input: &[u8], limit: usize) -> (Vec<u8>, usize) {
        let (events, mut seen) = unbounded_channel();
        let mut r = BoundedLines::new(input, limit, events);
        let mut out = Vec::new();
        // Small reads, so that lines and cuts straddle them.
        let mut chunk = [0u8; 3];
        loop {
            let n = r.read(&mut chunk).await.unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&chunk[..n]);
        }
        drop(r);
        let mut n = 0;
        while seen.recv().await.is_some() {
            n += 1;
        }
        (out, n)
    }

    #[tokio::test]
    async fn lines_within_the_limit_pass_and_a_longer_one_is_cut_and_reported() {
        let (out, n) = pass(b"abcd\nabcdefghij\nxy\n", 5).await;
        assert_eq!(n, 1);
        assert_eq!(out, b"abcd\n\0\nxy\n");
        // Exactly the limit passes; a last line without `\n` too.
        let (out, n) = pass(b"abcde\r\nabcde", 6).await;
        assert_eq!((out.as_slice(), n), (&b"abcde\r\nabcde"[..], 0));
        // A line over the limit as the input's last, and two in a row.
        let (out, n) = pass(b"ok\n0123456789\n0123456789", 4).await;
        assert_eq!((out.as_slice(), n), (&b"ok\n\0\n\0\n"[..], 2));
    }

    #[test]
    fn the_reply_is_a_json_rpc_error_with_a_null_id_naming_the_limit() {
        let line = oversized_reply(16 << 20);
        assert_eq!(line.last(), Some(&b'\n'));
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["id"], serde_json::Value::Null);
        assert_eq!(v["error"]["code"], -32600);
        assert!(v["error"]["message"].as_str().unwrap().contains("16777216"));
    }
}
