/* resample.h — `gpuaggctl resample --local`: roll-ups of a CSV file with the
 * engine in-process (no daemon).  See `gpuaggctl resample --help`. */
#ifndef GA_CTL_RESAMPLE_H
#define GA_CTL_RESAMPLE_H

/* Run the command.  argv[0] is "resample"; the options follow (--local is
 * accepted and ignored: the caller routes here only for --local).  Writes
 * the roll-ups to stdout and diagnostics to stderr.  Returns the process
 * exit code: 0 ok, 1 bad input data (a malformed line: nothing written; or
 * points rejected as before 1970 / non-finite: reported per line, the rest
 * aggregated and written), 2 usage error. */
int ctl_resample_local(int argc, char **argv);

#endif
