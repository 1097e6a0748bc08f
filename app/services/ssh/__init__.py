"""Another machine over ssh: one asyncssh connection kept up per machine (backoff, keepalives, host-key policy), the
remote shell loop that runs short commands without a session each, port forwards, log tails on their own channel,
SFTP writes, the asyncssh auth patch (one round trip instead of four), the ciphers offered (AES-GCM first), the
opt-in trace of remote operations, and the hosts ~/.ssh/config names (offered when a machine is added).

May import: `hosts/` and `core/`.
"""

import warnings

# cryptography 51 deprecates DSA, and asyncssh 2.24.1 names DSA types when it is imported: each command printed
# six CryptographyDeprecationWarning lines on stderr, before its own words (tests read stderr as one line). DSA
# keys are refused by OpenSSH anyway; the warning tells an operator nothing. Only asyncssh's DSA warnings are hidden.
warnings.filterwarnings("ignore", message="DSA is deprecated", module=r"asyncssh(\.|$)")
