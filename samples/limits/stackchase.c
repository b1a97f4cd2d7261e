/* A chain through an 11-int stack array: p = &a[a[a[j]]] and q five lookups deep, from one input
 * byte (j = byte % 11); the array's values are indices into itself. */
#include <unistd.h>
int main(void) {
    unsigned char c;
    if (read(0, &c, 1) != 1) return 1;
    int a[11] = {3, 7, 10, 0, 5, 9, 1, 4, 2, 8, 6};
    int j = c % 11;
    int *p = &a[a[a[j]]];
    int q = a[a[a[a[a[*p]]]]];
    return q < 4 ? 0 : q < 8 ? 1 : 2;
}
