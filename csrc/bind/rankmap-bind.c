/* rankmap-bind: bind this process as a mapping says, then exec the program.
 *
 *   rankmap-bind BINDING_FILE PROGRAM [ARGS...]
 *
 * srun's --cpu-bind=map_cpu gives every node the same list (indexed by node-local task id),
 * so per-node layouts need each task to bind itself: the rank comes from SLURM_PROCID
 * (or OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK), its line in BINDING_FILE
 * (`rank host core[,core...]`, hwloc logical core indices) gives the cores, which hwloc
 * on this node turns into a CPU set. A rank that runs on another host than the mapping
 * says is an error (exit 111): the mapping would be silently lost otherwise.
 * RANKMAP_BIND_VERBOSE=1 prints each binding; RANKMAP_BIND_HOSTCHECK=0 skips the check. */
#define _GNU_SOURCE
#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define FAIL 111

static const char *rank_env(void)
{
    static const char *names[] = {"SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return v;
    }
    return NULL;
}

static char *my_hostname(void)
{
    long max = sysconf(_SC_HOST_NAME_MAX);
    size_t n = (size_t)(max > 0 ? max : 255) + 2;
    char *h = calloc(n, 1);
    if (h && gethostname(h, n - 1) != 0) {
        free(h);
        return NULL;
    }
    return h;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: rankmap-bind BINDING_FILE PROGRAM [ARGS...]\n");
        return 2;
    }
    const char *file = argv[1];
    const char *rs = rank_env();
    if (!rs) {
        fprintf(stderr, "rankmap-bind: no rank in the environment (SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK)\n");
        return FAIL;
    }
    char *end;
    long rank = strtol(rs, &end, 10);
    if (*end || rank < 0) {
        fprintf(stderr, "rankmap-bind: bad rank '%s'\n", rs);
        return FAIL;
    }
    FILE *f = fopen(file, "r");
    if (!f) {
        fprintf(stderr, "rankmap-bind: %s: %s\n", file, strerror(errno));
        return FAIL;
    }
    char *line = NULL, *host = NULL, *cores = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) >= 0) {
        /* the Python reader's rules: blanks (and a CRLF's \r) separate fields, a line whose
           first field starts with '#' is a comment wherever it is indented */
        char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
        if (!tok || tok[0] == '#')
            continue;
        char *rend;
        long r = strtol(tok, &rend, 10);
        if (*rend || r != rank)
            continue;
        char *h = strtok_r(NULL, " \t\r\n", &save), *c = strtok_r(NULL, " \t\r\n", &save);
        if (h && c) {
            host = strdup(h);
            cores = strdup(c);
        }
        break;
    }
    free(line);
    fclose(f);
    if (!host || !cores) {
        fprintf(stderr, "rankmap-bind: rank %ld is not in %s\n", rank, file);
        return FAIL;
    }
    char *me = my_hostname();
    /* off as RANKMAP_PROFILE=off says it: only "0" did, "off" still failed the rank */
    const char *check = getenv("RANKMAP_BIND_HOSTCHECK");
    int skip = check && (!strcmp(check, "0") || !strcasecmp(check, "off") || !strcasecmp(check, "no") ||
                         !strcasecmp(check, "false"));
    if (me && strcmp(me, host) != 0 && !skip) {
        fprintf(stderr, "rankmap-bind: rank %ld runs on %s but the mapping puts it on %s (launch it as the "
                "mapping says, e.g. srun -m arbitrary with its hostfile; RANKMAP_BIND_HOSTCHECK=0 binds it "
                "here anyway)\n", rank, me, host);
        return FAIL;
    }

    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
        fprintf(stderr, "rankmap-bind: hwloc cannot read this node's topology\n");
        return FAIL;
    }
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    char *save = NULL;
    for (char *tok = strtok_r(cores, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long c = strtol(tok, &end, 10);
        hwloc_obj_t core = (*end || c < 0) ? NULL : hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned)c);
        if (!core) {
            fprintf(stderr, "rankmap-bind: rank %ld: core '%s' does not exist on %s (%d cores)\n", rank, tok,
                    me ? me : "this node", ncores);
            return FAIL;
        }
        hwloc_bitmap_or(set, set, core->cpuset);
    }
    if (hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) != 0) {
        fprintf(stderr, "rankmap-bind: rank %ld: binding to cores %s failed: %s\n", rank, cores ? cores : "?",
                strerror(errno));
        return FAIL;
    }
    const char *verbose = getenv("RANKMAP_BIND_VERBOSE");
    if (verbose && strcmp(verbose, "0")) {
        char *s = NULL;
        hwloc_bitmap_list_asprintf(&s, set);
        fprintf(stderr, "rankmap-bind: rank %ld on %s bound to CPUs %s\n", rank, me ? me : "?", s ? s : "?");
        free(s);
    }
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
    free(me);
    execvp(argv[2], argv + 2);
    fprintf(stderr, "rankmap-bind: cannot run %s: %s\n", argv[2], strerror(errno));
    return 127;
}
