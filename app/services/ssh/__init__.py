"""Another machine over ssh: one asyncssh connection kept up per machine (backoff, keepalives, host-key policy), the
remote shell loop that runs short commands without a session each, port forwards, log tails on their own channel,
SFTP writes, the asyncssh auth patch (one round trip instead of four), and the opt-in trace of remote operations.

May import: `hosts/` and `core/`.
"""
