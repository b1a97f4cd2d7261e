/* A key=value parser over a line from stdin: strchr, strtol, strcmp on the parts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    char line[32];
    if (!fgets(line, sizeof line, stdin))
        return 2;
    line[strcspn(line, "\n")] = 0;
    char *eq = strchr(line, '=');
    if (!eq) {
        puts("no pair");
        return 1;
    }
    *eq = 0;
    long v = strtol(eq + 1, NULL, 10);
    if (strcmp(line, "port") == 0 && v > 1000 && v < 1100 && v % 7 == 3)
        puts("config ok");
    else
        puts("config rejected");
    return 0;
}
