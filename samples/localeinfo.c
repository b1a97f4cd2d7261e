/* What a program sees of its locale after setlocale(LC_ALL, ""): the locale's name, MB_CUR_MAX
 * and whether its input byte is printable. angr-ram's models are those of the C locale
 * (setlocale answers "C", MB_CUR_MAX is 1), so its tests replay in the C locale whatever the
 * replaying shell's LANG says (C.UTF-8 would print another name and MB_CUR_MAX 6). */
#include <ctype.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    const char *name = setlocale(LC_ALL, "");
    int c = getchar();
    printf("locale=%s mb_cur_max=%d\n", name ? name : "(null)", (int)MB_CUR_MAX);
    if (c == EOF)
        return 2;
    return isprint(c) ? 1 : 0;
}
