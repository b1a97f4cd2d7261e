/* strdup and strndup of input bytes, both freed (C11 7.24.2 idiom, POSIX strdup/strndup): the
 * copies' lengths and whether the copy starts with 'a'. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
    char buf[4] = {0};
    if (read(0, buf, 3) != 3)
        return 9;
    char *p = strdup(buf);
    char *q = strndup(p, 2);
    if (!p || !q)
        return 8;
    printf("%zu %zu %d\n", strlen(p), strlen(q), p[0] == 'a');
    int r = (int)strlen(p);
    free(q);
    free(p);
    return r;
}
