/* Wide-character streams in the C locale: lines of at most 3 characters read with fgetws, printed
   reversed with fputwc and putwchar, a character peeked with fgetwc and pushed back with ungetwc;
   a byte above 0x7f stops the reading with EILSEQ and the error flag. Against glibc natively. */
#include <stdio.h>
#include <wchar.h>
int main(void) {
    wchar_t line[4];
    int lines = 0;
    wint_t first = fgetwc(stdin);
    if (first != WEOF)
        ungetwc(first, stdin);
    while (fgetws(line, 4, stdin)) {
        for (size_t i = wcslen(line); i > 0; i--)
            if (line[i - 1] != L'\n')
                fputwc(line[i - 1], stdout);
        putwchar(L'|');
        lines++;
    }
    fputws(first == WEOF ? L"(none)" : L"<", stdout);
    if (first != WEOF)
        putwc(first, stdout);
    fputws(L">\xe9\n", stdout);     /* not ASCII: glibc writes "?" */
    return lines * 2 + (ferror(stdin) != 0);
}
