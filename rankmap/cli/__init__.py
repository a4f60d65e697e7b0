"""The `rankmap` command: one entry point, one subcommand per task, one module per group
of verbs (profiling, mapping, launch, simulation, demo). Each verb parses its options and
calls the layer below; user mistakes raise UserError anywhere below and are printed here
as one line (no traceback) with exit status 2."""
from __future__ import annotations

import errno
import os
import sys

import click

from rankmap.cli.console import console, err_console
from rankmap.profiler.errors import UserError

EXIT_USER = 2        # a mistake the user can fix (bad input, option, path)
EXIT_INTERNAL = 70   # a bug in rankmap (EX_SOFTWARE)


def error_line(msg: str) -> None:
    """The one line every error ends in: `rankmap: error: ...` (markup in the message is text)."""
    from rich.markup import escape
    from rankmap.profiler.validate import one_line
    err_console.print(f"[bold red]rankmap: error:[/bold red] {escape(one_line(msg))}", soft_wrap=True,
                      highlight=False)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (kill, `timeout`, Slurm's time limit and scancel, a closed terminal),
    handled as Ctrl-C is: Python's default ended the process at once, so the job a command
    had started in its own process group (`rankmap profile`'s launcher and ranks) ran on
    orphaned, and a mapping being written left its temporary directory behind."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum, frame):
    raise Terminated(signum)


class RankmapGroup(click.Group):
    """Every way a command can fail ends in one line on stderr, never a traceback: mistakes
    (UserError, click's usage errors) exit with 2; anything else is a bug, printed as one
    `internal error` line (RANKMAP_DEBUG=1 shows the traceback) with exit status 70."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        import signal
        import threading
        kept = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                if signal.getsignal(sig) == signal.SIG_DFL:      # (never one a caller has set, nor an ignored one)
                    kept[sig] = signal.signal(sig, _raise_terminated)
        try:
            return self._main(args, prog_name, complete_var, standalone_mode, **extra)
        finally:
            for sig, handler in kept.items():
                signal.signal(sig, handler)

    def _main(self, args, prog_name, complete_var, standalone_mode, **extra):
        try:
            rv = super().main(args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False,
                              **extra)
        except UserError as e:
            error_line(str(e))
            sys.exit(EXIT_USER)
        except click.exceptions.NoArgsIsHelpError as e:
            # `rankmap` alone: its help, as click shows it (it was squashed into one "error" line)
            click.echo(e.format_message())
            sys.exit(EXIT_USER)
        except click.exceptions.UsageError as e:
            where = e.ctx.command_path if e.ctx is not None else (prog_name or "rankmap")
            verb = where.split(" ", 1)[1] + ": " if " " in where else ""
            error_line(f"{verb}{e.format_message().rstrip('.')} (see: {where} --help)")
            sys.exit(EXIT_USER)
        except click.exceptions.Abort as e:
            if isinstance(e.__cause__, Terminated):       # (click turns a KeyboardInterrupt into Abort)
                self._terminated(e.__cause__)
            error_line("aborted")
            sys.exit(130)
        except click.ClickException as e:
            error_line(e.format_message())
            sys.exit(e.exit_code or EXIT_USER)
        except Terminated as e:
            self._terminated(e)
        except KeyboardInterrupt:
            error_line("interrupted (Ctrl-C); outputs being written were left as they were")
            sys.exit(130)
        except BrokenPipeError:
            sys.exit(0)
        except MemoryError:
            error_line("out of memory: the input is too large for this host's memory (see the limits in "
                       "docs/formats.md)")
            sys.exit(EXIT_USER)
        except OSError as e:
            # a path the file system refuses wherever it is first looked at (a name longer than
            # 255 bytes, a loop of symbolic links): the user's path, named, not a bug
            if e.errno in (errno.ENAMETOOLONG, errno.ELOOP) and e.filename is not None and \
                    not _debug():
                name = os.fsdecode(e.filename)
                error_line(f"{name if len(name) <= 80 else name[:77] + '...'}: {e.strerror}")
                sys.exit(EXIT_USER)
            self._internal(e)
        except Exception as e:   # noqa: BLE001  (the last line of defence: never a traceback for a user)
            self._internal(e)
        if standalone_mode:
            sys.exit(rv if isinstance(rv, int) else 0)
        return rv

    def resolve_command(self, ctx, args):
        name, cmd, rest = super().resolve_command(ctx, args)
        if cmd is not None and not ctx.resilient_parsing:
            _given_once(cmd, name, ctx, rest)
        return name, cmd, rest

    @staticmethod
    def _terminated(e: Terminated):
        import signal
        error_line(f"terminated ({signal.Signals(e.signum).name}); outputs being written were left as they were")
        sys.exit(128 + e.signum)

    @staticmethod
    def _internal(e: Exception):
        if _debug():
            raise e
        error_line(f"internal error: {type(e).__name__}: {e} (a bug in rankmap; please report it with the "
                   "command line; RANKMAP_DEBUG=1 shows where it happened)")
        sys.exit(EXIT_INTERNAL)


def _given_once(cmd: click.Command, name: str, parent: click.Context, args: list[str]) -> None:
    """An option that takes one value, given twice, is an error: click keeps the last one and
    drops the first without a word (`--nodes n[1-16] --nodes n[17-32]` mapped onto n[17-32]
    alone; `--out a --out b` wrote b). Options that repeat (--node-topology, --srun-arg) and
    flags may; what follows the program (`-- ./app --out x`) is the program's."""
    ctx = click.Context(cmd, info_name=name, parent=parent, **cmd.context_settings)
    try:
        _, _, order = cmd.make_parser(ctx).parse_args(args=list(args))
    except click.exceptions.UsageError:
        return                          # the command's own parse names it
    if any(getattr(p, "is_eager", False) for p in order):
        return                          # --help, --version: shown whatever else is given
    seen = set()
    for p in order:
        if isinstance(p, click.Option) and not (p.multiple or p.count or p.is_flag):
            if p.name in seen:
                raise click.UsageError(f"{'/'.join(p.opts)} given more than once; give it once (only the last one "
                                       "would count)", ctx=ctx)
            seen.add(p.name)


def _debug() -> bool:
    """RANKMAP_DEBUG=1 (or yes/true) shows tracebacks; unset, empty, 0, no, false do not."""
    return os.environ.get("RANKMAP_DEBUG", "").strip().lower() not in ("", "0", "no", "false", "off")


@click.group(cls=RankmapGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rankmap")
def cli():
    """rankmap: profile an MPI program's traffic, map its ranks onto the machine's
    topology, and relaunch it there."""


from rankmap.cli import demo, launch, mapping, profiling, simulation  # noqa: E402  (verbs register on cli)

for _module in (profiling, mapping, launch, simulation, demo):
    for _cmd in _module.COMMANDS:
        cli.add_command(_cmd)


def main():
    cli(prog_name="rankmap")


__all__ = ["cli", "main", "console"]
