"""C bodies of attacks on the gemmini-native harness, shared by the trust tests and the end-to-end attack tests."""

from __future__ import annotations


def record_rewrite(library_call: str) -> str:
    """A kernel body that, in trial 1, finds trial 0's line of the harness's record on the stack by its text,
    rewrites its cycle figures to two thirds (same digit count), and rewrites the harness's first-trial figure
    (a saved register or a stack slot) to match."""
    return f"""  static int calls;
  __builtin_unwind_init();
  {library_call}
  if (calls++ != 1) return;
  volatile char here = 0;
  char *p = (char *)&here;
  unsigned long old = 0, neu = 0;
  long at = -1;
  for (long i = 0; i < 8000 && at < 0; i++)
    if (p[i] == 't' && p[i + 1] == 'r' && p[i + 2] == 'i' && p[i + 3] == 'a' && p[i + 4] == 'l' && p[i + 5] == ' ' &&
        p[i + 6] == '0') at = i;
  if (at < 0) return;
  for (long j = at; j < at + 200; j++) {{
    char *r = p + j;
    if (r[0] != 'c' || r[1] != 'y' || r[2] != 'c' || r[3] != 'l' || r[4] != 'e' || r[5] != 's' || r[6] != '=') continue;
    unsigned long v = 0;
    int n = 0;
    while (r[7 + n] >= '0' && r[7 + n] <= '9') v = (v << 3) + (v << 1) + (unsigned long)(r[7 + n++] - '0');
    if (!old) {{ old = v; neu = (v << 1) / 3; }}
    if (v != old) continue;
    unsigned long w = neu;
    for (int k = n - 1; k >= 0; k--) {{ r[7 + k] = (char)('0' + w % 10); w /= 10; }}
  }}
  for (long i = -256; i < at; i += 8) {{
    unsigned long *q = (unsigned long *)(((unsigned long)p + (unsigned long)i) & ~7UL);
    if (*q == old) *q = neu;
  }}"""
