/* wctype/iswctype, as regex char classes ("[[:alpha:]]") use them: the first input byte picks a
 * class name (one of glibc's twelve, or one that is none), the second is tested against it. Prints
 * the name, whether wctype knew it, and whether the byte is in the class. */
#include <stdio.h>
#include <unistd.h>
#include <wctype.h>

static const char *names[] = {"alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower",
                              "print", "punct", "space", "upper", "xdigit", "word"};

int main(void)
{
    unsigned char in[2];
    if (read(0, in, 2) != 2)
        return 2;
    const char *name = names[in[0] % 13];
    wctype_t t = wctype(name);
    int member = t != 0 && iswctype((wint_t)in[1], t) != 0;
    printf("%s %d %d\n", name, t != 0, member);
    return member;
}
