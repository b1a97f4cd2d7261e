#include <stdio.h>
int main(void) { int c = getchar(); printf("%d\n", c); return c == 'A'; }
