"""An emulator as its own process, as the fault suite's parts start them (soak: kill/restart;
mixed_soak: every robot in one bringup). Its own module so that soak and mixed_soak both
import it and neither imports the other."""

import queue
import signal
import subprocess
import sys
import threading
import time

from legacy_robot_common.emulator import MAIN_FRAMES, parse_main_frames


class Emulator:
    """An emulator process started from a RestartSpec; ready once it printed its address. Its
    output goes on to log (a thread copies it, so a chatty emulator never blocks on a full
    pipe); tell() writes a line to its standard input (the Nabaztag's console); hold() asks it
    for its count of main-stream frames."""

    def __init__(self, arguments, log):
        self.process = subprocess.Popen(
            [sys.executable, '-m', *arguments],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        line = self.process.stdout.readline()  # run_emulator's "… on <address>" line
        if not line:
            raise RuntimeError(f'emulator {arguments[0]} did not start (see {log.name})')
        self.ready = time.monotonic()
        log.write(line)
        self._held = queue.Queue()
        threading.Thread(target=self._copy, args=(log,), daemon=True).start()

    def _copy(self, log):
        try:
            for line in self.process.stdout:
                log.write(line)
                if line.startswith(MAIN_FRAMES):
                    self._held.put(line)
        except ValueError:
            pass  # the log was closed after the kill

    def hold(self, timeout=5.0):
        """Silence the emulator (SIGUSR1) → (main frames it sent, of them at risk), or None if
        it does not count them (no reply within timeout counts as None too)."""
        self.process.send_signal(signal.SIGUSR1)
        try:
            line = self._held.get(timeout=timeout)
        except queue.Empty:
            return None
        return parse_main_frames(line)

    def tell(self, line):
        try:
            self.process.stdin.write(line + '\n')
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass  # killed meanwhile: the next one gets the next line

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
