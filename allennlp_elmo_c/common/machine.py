import platform


def cpu_name() -> str:
    """The CPU's model name (`/proc/cpuinfo`), else what `platform` knows."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            return next(line.split(":", 1)[1].strip() for line in cpuinfo
                        if line.startswith("model name"))  # fmt: skip
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()
