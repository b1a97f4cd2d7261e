/* Use after free (input 'f'), double free (input 'd'), invalid free (input 'i'). */
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    unsigned char c = 0;
    if (read(0, &c, 1) != 1) return 2;
    int *p = malloc(2 * sizeof(int));
    p[0] = 5;
    p[1] = 6;
    if (c == 'f') free(p);
    if (c == 'd') { free(p); free(p); return 9; }
    if (c == 'i') { free(p + 1); return 8; }
    return p[0];
}
