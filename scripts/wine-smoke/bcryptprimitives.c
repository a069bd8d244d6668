/* A stand-in for Windows's bcryptprimitives.dll, which Wine 8 lacks and the
 * Go runtime (1.24 and later) loads for ProcessPrng, its random source. It
 * fills the buffer from RtlGenRandom (advapi32's SystemFunction036). Only
 * for running Rebound's Windows build under Wine in tests. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG n = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, n))
            return FALSE;
        data += n;
        length -= n;
    }
    return TRUE;
}
