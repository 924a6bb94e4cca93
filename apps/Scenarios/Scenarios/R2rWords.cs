using System.Diagnostics;
using System.Globalization;
using System.Reflection.Metadata;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace Scenarios;

/// <summary>
/// `r2r-words [seconds=1]`: a stack full of words that look like return addresses into a
/// ReadyToRun image none of whose code has run. The image is System.Private.Xml's (only
/// its metadata is loaded here, through <c>typeof(XmlDocument)</c>); the words are
/// addresses in its executable mapping that follow an <c>E8</c> byte (the first byte of
/// <c>call rel32</c>), spread over the whole mapping. A few bytes of machine code of our
/// own push them in (saved-RBP, return-address) pairs, set RBP to 0 and spin: a
/// frame-pointer walk that meets RBP 0 scans the stack for frame records, and these pairs
/// look like records returning into that image. The runtime's code lookup
/// (<c>ReadyToRunJitManager::JitCodeToMethodInfo</c>) walks down the image's method table
/// to the nearest method whose entry point it has handed out, with no lower bound: in an
/// image where none has been, it reads past the table's start until it faults.
/// </summary>
public static unsafe class R2rWords
{
    private const int ProtRead = 1;
    private const int ProtWrite = 2;
    private const int ProtExec = 4;
    private const int MapPrivate = 2;
    private const int MapAnonymous = 0x20;

    /// <summary>Pairs pushed: 8 KiB of stack, inside what the walk scans.</summary>
    private const int Pairs = 512;

    [DllImport("libc", EntryPoint = "mmap")]
    private static extern nint Mmap(nint addr, nuint length, int prot, int flags, int fd, nint offset);

    [DllImport("libc", EntryPoint = "mprotect")]
    private static extern int Mprotect(nint addr, nuint length, int prot);

    [DllImport("libc", EntryPoint = "munmap")]
    private static extern int Munmap(nint addr, nuint length);

    /// <summary>
    /// <c>void spin(ulong* words, long count, long iterations)</c>: pushes the words as
    /// (saved RBP = the address of its own saved RBX, higher up; word) pairs, sets RBP to
    /// 0, counts <c>iterations</c> down, restores the stack and returns.
    /// </summary>
    private static readonly byte[] SpinCode =
    [
        0x55,                   // push rbp
        0x53,                   // push rbx
        0x48, 0x89, 0xE3,       // mov rbx, rsp
        0x48, 0x89, 0xF1,       // mov rcx, rsi
        0x48, 0x85, 0xC9,       // L1: test rcx, rcx
        0x74, 0x09,             // jz L2
        0x48, 0xFF, 0xC9,       // dec rcx
        0xFF, 0x34, 0xCF,       // push qword [rdi + rcx*8]
        0x53,                   // push rbx
        0xEB, 0xF2,             // jmp L1
        0x31, 0xED,             // L2: xor ebp, ebp
        0x48, 0xFF, 0xCA,       // L3: dec rdx
        0x75, 0xFB,             // jnz L3
        0x48, 0x89, 0xDC,       // mov rsp, rbx
        0x5B,                   // pop rbx
        0x5D,                   // pop rbp
        0xC3,                   // ret
    ];

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int seconds = args.Int("seconds", 1);
        // Loads System.Private.Xml and one of its types; runs none of its code. Its image
        // is found by where its metadata lies, so that a single-file app (its images mapped
        // from inside the app's own file, `Assembly.Location` empty) finds it too.
        var assembly = typeof(System.Xml.XmlDocument).Assembly;
        ulong metadata = assembly.TryGetRawMetadata(out byte* blob, out _) ? (ulong)blob : 0;
        var (lo, hi, file) = ExecutableMapping(metadata);
        if (lo == 0)
        {
            Results.Print(("r2r_words_ok", false), ("r2r_file", file));
            return 1;
        }
        ulong[] words = Words(lo, hi);
        nint code = Mmap(0, 4096, ProtRead | ProtWrite, MapPrivate | MapAnonymous, -1, 0);
        if (code == -1)
        {
            Results.Print(("r2r_words_ok", false), ("r2r_mmap", Marshal.GetLastPInvokeError()));
            return 1;
        }
        Marshal.Copy(SpinCode, 0, code, SpinCode.Length);
        Mprotect(code, 4096, ProtRead | ProtExec);
        var spin = (delegate* unmanaged<ulong*, long, long, void>)code;
        long rounds = 0;
        var clock = Stopwatch.StartNew();
        fixed (ulong* w = words)
        {
            while (clock.Elapsed.TotalSeconds < seconds)
            {
                spin(w, words.Length, 20_000_000);
                rounds++;
            }
        }
        Munmap(code, 4096);
        Results.Print(
            ("r2r_file", file),
            ("r2r_words", words.Length),
            ("r2r_rounds", rounds),
            ("r2r_words_ok", words.Length > 0 && rounds > 0));
        return 0;
    }

    /// <summary>
    /// The executable mapping in /proc/self/maps of the image whose metadata lies at
    /// <paramref name="metadata"/>, and its file's name: the metadata's offset in the file
    /// it is mapped from (the image's own mapping, or a flat copy of the file) lies in the
    /// file range the executable mapping maps.
    /// </summary>
    private static (ulong Lo, ulong Hi, string File) ExecutableMapping(ulong metadata)
    {
        var maps = new List<(ulong Lo, ulong Hi, string Perms, ulong Offset, string Path)>();
        foreach (string line in File.ReadLines("/proc/self/maps"))
        {
            string[] parts = line.Split(' ', StringSplitOptions.RemoveEmptyEntries);
            if (parts.Length < 5)
            {
                continue;
            }
            string[] range = parts[0].Split('-');
            maps.Add((
                ulong.Parse(range[0], NumberStyles.HexNumber, CultureInfo.InvariantCulture),
                ulong.Parse(range[1], NumberStyles.HexNumber, CultureInfo.InvariantCulture),
                parts[1],
                ulong.Parse(parts[2], NumberStyles.HexNumber, CultureInfo.InvariantCulture),
                parts.Length > 5 ? parts[5] : ""));
        }
        foreach (var m in maps)
        {
            if (m.Lo > metadata || metadata >= m.Hi)
            {
                continue;
            }
            if (m.Path.Length == 0)
            {
                // An image copied into anonymous memory (a compressed single-file app's):
                // its metadata lies in its executable section, if anywhere.
                return m.Perms.Contains('x') ? (m.Lo, m.Hi, "anonymous") : (0, 0, "metadata-in-anonymous-" + m.Perms);
            }
            ulong fileOffset = m.Offset + (metadata - m.Lo);
            foreach (var x in maps)
            {
                if (x.Path == m.Path && x.Perms.Contains('x')
                    && x.Offset <= fileOffset && fileOffset < x.Offset + (x.Hi - x.Lo))
                {
                    return (x.Lo, x.Hi, Path.GetFileName(x.Path));
                }
            }
            return (0, 0, "metadata-in-" + Path.GetFileName(m.Path));
        }
        return (0, 0, "no-metadata-mapping");
    }

    /// <summary>
    /// Up to <see cref="Pairs"/> addresses in [lo + 8, hi) whose fifth byte back is 0xE8,
    /// evenly spread over the mapping.
    /// </summary>
    private static ulong[] Words(ulong lo, ulong hi)
    {
        var all = new List<ulong>();
        byte* p = (byte*)lo;
        for (ulong a = lo + 8; a < hi; a++)
        {
            if (p[a - 5 - lo] == 0xE8)
            {
                all.Add(a);
            }
        }
        int n = Math.Min(Pairs, all.Count);
        var words = new ulong[n];
        for (int i = 0; i < n; i++)
        {
            words[i] = all[(int)((long)i * all.Count / n)];
        }
        return words;
    }
}
