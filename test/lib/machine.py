"""For the tests that change the machine itself (as root): a system user, a package install. They
hold machine_lock() so that two test runs on one machine (two checkouts) take turns, and put back
what they found."""
import contextlib
import fcntl
import os
import pwd
import subprocess

LOCK = os.path.join("/run/lock" if os.path.isdir("/run/lock") else "/tmp", "pg_relay-tests-machine.lock")


@contextlib.contextmanager
def machine_lock():
    with open(LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def user_exists(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def remove_user(name):
    """Remove a system user (and its group) that a test made."""
    subprocess.run(["userdel", name], check=True)
    subprocess.run(["groupdel", name], stderr=subprocess.DEVNULL)
