/* sscanf over a line longer than angr's max_str_len (128): the number starts after 140 spaces, and
 * sscanf skips white space up to it. */
#include <stdio.h>
#include <string.h>

int main(void)
{
    char line[200];
    memset(line, ' ', sizeof line);
    if (fread(line + 140, 1, 3, stdin) != 3)
        return 3;
    line[143] = 0;
    int v = 0;
    int got = sscanf(line, "%d", &v);
    printf("%d %d\n", got, v);
    return v > 5;
}
