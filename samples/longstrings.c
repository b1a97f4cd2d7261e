/* Strings longer than angr's max_str_len (128) whose end depends on the input: printf's %s, strlen,
 * strdup, puts and fputs of a suffix, strcmp and strchr; fputs of the input, which ends at its
 * first NUL, and of its copy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    char line[300];
    memset(line, '.', sizeof line);
    if (fread(line + 140, 1, 3, stdin) != 3)
        return 3;
    char head[4] = {0};
    memcpy(head, line + 140, 3);
    fputs(head, stdout);
    char *dup = strdup(head);
    if (!dup)
        return 4;
    printf("|%s|", dup);
    free(dup);
    line[150 + (line[141] == '1') * 100] = 0;
    char *copy = strdup(line);
    if (!copy)
        return 4;
    printf("%s|%zu\n", line, strlen(line));
    puts(copy + 100);
    fputs(copy + 130, stdout);
    putchar('\n');
    int order = strcmp(copy, line + 0);
    line[142] = 'z';
    int after = strcmp(copy, line);
    printf("%d %d\n", order, after > 0 ? 1 : after < 0 ? -1 : 0);
    free(copy);
    return strchr(line, 'a') != NULL;
}
