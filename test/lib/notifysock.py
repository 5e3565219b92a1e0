"""A stand-in for systemd's notification socket: a unix datagram socket that a Processor started
with NOTIFY_SOCKET pointing at it sends READY=1, WATCHDOG=1, STATUS=... to (sd_notify(3)).
Like systemd, it reads every datagram as it arrives (a thread of its own): a datagram socket's
queue holds only net.unix.max_dgram_qlen messages (10), and a Processor must not find it full
because the test was busy elsewhere. Tests read what arrived and wait for messages by polling,
never by sleeping."""
import os
import socket
import threading
import time


class NotifySocket:
    def __init__(self, directory):
        self.path = os.path.join(str(directory), "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        os.chmod(self.path, 0o777)            # a Processor running as another user may send too
        self.sock.settimeout(0.05)
        self.messages = []                    # every datagram so far: a dict of its assignments
        self.lock = threading.Lock()
        self.closing = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def env(self, watchdog_usec=None):
        """The environment systemd gives a Type=notify service (WATCHDOG_USEC for WatchdogSec=)."""
        e = {"NOTIFY_SOCKET": self.path}
        if watchdog_usec:
            e["WATCHDOG_USEC"] = str(watchdog_usec)
        return e

    def _read(self):
        while not self.closing:
            try:
                data = self.sock.recv(4096)
            except (socket.timeout, BlockingIOError):
                continue
            except OSError:
                return                        # closed
            with self.lock:
                self.messages.append(dict(line.split("=", 1) for line in data.decode().splitlines()
                                          if "=" in line))

    def received(self):
        """Every message so far."""
        with self.lock:
            return list(self.messages)

    def wait(self, pred, what, timeout=30.0, after=0):
        """Wait for a message (among those from index `after` on) that pred(message) accepts;
        return its index. The timeout only bounds a broken test."""
        deadline = time.monotonic() + timeout
        while True:
            messages = self.received()
            for i in range(after, len(messages)):
                if pred(messages[i]):
                    return i
            if time.monotonic() > deadline:
                raise AssertionError("timed out after %ss waiting for %s; received: %r"
                                     % (timeout, what, messages))
            time.sleep(0.01)                  # polling what the reader thread collected

    def wait_key(self, key, value=None, after=0, timeout=30.0):
        return self.wait(lambda m: key in m and (value is None or m[key] == value),
                         "%s=%s" % (key, value if value is not None else "*"), timeout, after)

    def close(self):
        self.closing = True
        self.reader.join()
        self.sock.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
