/* A table of pointers with empty slots read without a null check: an input that selects an empty
 * slot dereferences null (stdin: four bytes, the low six bits select the slot). */
#include <stdlib.h>
#include <unistd.h>
struct item { int key; int val; };
static struct item *slots[64];
int main(void) {
    unsigned k = 0;
    if (read(0, &k, sizeof k) != sizeof k) return 2;
    for (int i = 0; i < 64; i++)
        if (i % 3) {
            slots[i] = malloc(sizeof(struct item));
            slots[i]->key = i;
            slots[i]->val = i * 7 % 5;
        }
    struct item *p = slots[k & 63];
    if (p->val == 4) return 3;
    return p->val > 1;
}
