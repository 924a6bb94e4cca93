using System.Runtime.InteropServices;

namespace Clrprof.Launcher;

/// <summary>
/// `clrprof` installed as a .NET tool: replaces this process with the native CLI packed
/// beside it (execv), so that signals, the exit code and the terminal are the CLI's own,
/// and the CLI finds the profiler library next to itself.
/// </summary>
internal static class Program
{
    [DllImport("libc", SetLastError = true)]
    // LPStr is UTF-8 on Unix.
    private static extern int execv(
        [MarshalAs(UnmanagedType.LPUTF8Str)] string path,
        [MarshalAs(UnmanagedType.LPArray, ArraySubType = UnmanagedType.LPStr)] string?[] argv);

    private static int Main(string[] args)
    {
        if (!OperatingSystem.IsLinux() || RuntimeInformation.OSArchitecture != Architecture.X64)
        {
            Console.Error.WriteLine(
                $"clrprof: this package carries the linux-x64 build, and this is {RuntimeInformation.RuntimeIdentifier}; " +
                "build clrprof from source for this platform (README.md)");
            return 1;
        }
        string native = Path.Combine(AppContext.BaseDirectory, "native", "clrprof");
        if (!File.Exists(native))
        {
            Console.Error.WriteLine($"clrprof: the native CLI is missing from the tool package ({native}); reinstall the tool");
            return 1;
        }
        // NuGet does not keep file modes: the first run marks the CLI executable.
        const UnixFileMode Exec = UnixFileMode.UserExecute | UnixFileMode.GroupExecute | UnixFileMode.OtherExecute;
        UnixFileMode mode = File.GetUnixFileMode(native);
        if ((mode & UnixFileMode.UserExecute) == 0)
        {
            try
            {
                File.SetUnixFileMode(native, mode | Exec);
            }
            catch (Exception e) when (e is UnauthorizedAccessException or IOException)
            {
                Console.Error.WriteLine($"clrprof: cannot make {native} executable ({e.Message}); run `chmod +x {native}` as its owner");
                return 1;
            }
        }
        var argv = new string?[args.Length + 2];
        argv[0] = native;
        args.CopyTo(argv, 1);
        argv[^1] = null;
        execv(native, argv);
        int errno = Marshal.GetLastPInvokeError();
        Console.Error.WriteLine($"clrprof: cannot run {native}: errno {errno} ({Marshal.GetPInvokeErrorMessage(errno)})");
        return 127;
    }
}
