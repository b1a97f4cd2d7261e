/* Options read from a line of stdin, as programs take them from an environment variable or a
 * configuration line (GNU make decodes MAKEFLAGS this way): the line is copied to the heap and split
 * into words, the words form a heap argv, and getopt_long parses it. The option letters, and
 * whether a word ends after one, come from the input. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct option longopts[] = {
    {"keep-going", no_argument, NULL, 'k'},
    {"jobs", required_argument, NULL, 'j'},
    {"silent", no_argument, NULL, 's'},
    {NULL, 0, NULL, 0},
};

int main(void) {
    char line[64];
    if (!fgets(line, sizeof line, stdin))
        return 3;
    char *copy = strdup(line);
    char **argv = malloc(sizeof(char *) * 12);
    int argc = 0;
    argv[argc++] = "prog";
    char *p = copy;
    while (*p && argc < 11) {
        while (*p == ' ' || *p == '\n')
            *p++ = 0;
        if (!*p)
            break;
        argv[argc++] = p;
        while (*p && *p != ' ' && *p != '\n')
            p++;
    }
    argv[argc] = NULL;
    int k = 0, n = 0, s = 0, j = 0, bad = 0, c;
    while ((c = getopt_long(argc, argv, "knsj:", longopts, NULL)) != -1) {
        switch (c) {
        case 'k': k++; break;
        case 'n': n++; break;
        case 's': s++; break;
        case 'j': j = atoi(optarg); break;
        default: bad++; printf("bad %d\n", optopt % 5); break;   /* which letter, in 5 classes */
        }
    }
    printf("k=%d n=%d s=%d j=%d bad=%d rest=%d\n", k, n, s, j, bad, argc - optind);
    for (int i = optind; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\n");
    free(argv);
    free(copy);
    return bad ? 1 : 0;
}
