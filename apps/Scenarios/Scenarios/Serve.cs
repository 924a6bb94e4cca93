using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace Scenarios;

/// <summary>
/// `serve [workers=2]`: a long-running target for attach tests. Prints <c>READY &lt;pid&gt;</c>;
/// threads serve-worker-1 and serve-worker-2 loop calling ServeWork (about 1 ms of CPU each,
/// then a 1 ms sleep; <c>workers=0</c> starts none, for benches that time one thread). Commands on stdin, one a line: <c>load</c> loads Plugin.dll (shipped next to
/// the app, not referenced) with Assembly.LoadFrom, calls into it and prints <c>LOADED</c>;
/// <c>result</c> prints <c>RESULT work_items=&lt;n&gt;</c>; <c>burst [n]</c> runs a burst of
/// calls on the main thread (see <see cref="Burst"/>) and prints its counts; <c>quit</c> or end
/// of file exits 0. <c>spin n</c> times n calls of an empty method; <c>many [k]</c> calls each
/// of 1,000 generated methods (<see cref="Many"/>) k times; <c>pauses</c> starts a thread that
/// watches for the longest stretch it did not run (a runtime suspension shows there) and
/// <c>pauses?</c> stops it and prints that stretch in µs.
/// </summary>
public static class Serve
{
    private static long s_workItems;
    private static long s_sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int workers = args.NamedInt("workers", 2);
        for (int i = 1; i <= workers; i++)
        {
            new Thread(WorkerLoop) { Name = $"serve-worker-{i}", IsBackground = true }.Start();
        }
        Console.Out.WriteLine($"READY {Environment.ProcessId}");
        Console.Out.Flush();

        while (Console.In.ReadLine() is { } line)
        {
            switch (line.Trim())
            {
                case "load":
                    LoadPlugin();
                    Console.Out.WriteLine("LOADED");
                    break;
                case "result":
                    Results.Print(("work_items", Interlocked.Read(ref s_workItems)));
                    break;
                case var so when so.StartsWith("spin-other", StringComparison.Ordinal):
                    SpinOther(int.Parse(so[10..].Trim(), System.Globalization.CultureInfo.InvariantCulture));
                    break;
                case var sp when sp.StartsWith("spin", StringComparison.Ordinal):
                    Spin(int.Parse(sp[4..].Trim(), System.Globalization.CultureInfo.InvariantCulture));
                    break;
                case var b when b.StartsWith("burst", StringComparison.Ordinal):
                    int n = b.Length > 5 ? int.Parse(b[5..].Trim(), System.Globalization.CultureInfo.InvariantCulture) : 1000;
                    Burst(n);
                    break;
                case var m when m.StartsWith("many", StringComparison.Ordinal):
                    // `many [k]`: k rounds of calling each of the 1,000 generated methods once.
                    int rounds = m.Length > 4 ? int.Parse(m[4..].Trim(), System.Globalization.CultureInfo.InvariantCulture) : 1;
                    long manySum = 0;
                    for (int r = 0; r < rounds; r++)
                    {
                        manySum += ManyCalls.CallAll(r);
                    }
                    Results.Print(("many", (long)rounds * ManyCalls.Count), ("many_sum", manySum));
                    break;
                case "pauses":
                    PauseWatch.Start();
                    Console.Out.WriteLine("WATCHING");
                    break;
                case "pauses?":
                    Results.Print(("pause_max_us", PauseWatch.Stop()));
                    break;
                case "quit":
                    return 0;
                case "":
                    break;
                default:
                    Console.Error.WriteLine($"serve: unknown command '{line.Trim()}' (load, result, quit)");
                    break;
            }
            Console.Out.Flush();
        }
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void LoadPlugin()
    {
        string path = Path.Combine(AppContext.BaseDirectory, "Plugin.dll");
        Assembly plugin = Assembly.LoadFrom(path);
        MethodInfo run = plugin.GetType("Plugin.PluginEntry", throwOnError: true)!.GetMethod("Run")!;
        Interlocked.Add(ref s_sink, (long)run.Invoke(null, [100])!);
    }

    /// <summary>
    /// A burst whose calls the attach-time probes must count exactly: BurstCall n times,
    /// BurstThrow n/10 times (each throws, caught here), BurstEcho&lt;int&gt; n times and
    /// BurstEcho&lt;string&gt; n/2 times (one method, two instantiations), and the async
    /// BurstAsync 5 times (each awaits a Task.Yield). Prints what it counted itself and a
    /// checksum that must not change under the probes.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Burst(int n)
    {
        long sum = 0;
        int calls = 0, throws = 0, caught = 0, echoInt = 0, echoString = 0, asyncCalls = 0;
        for (int i = 0; i < n; i++)
        {
            sum += BurstCall(i);
            calls++;
            sum += BurstEcho(i);
            echoInt++;
            if (i % 2 == 0)
            {
                sum += BurstEcho("s" + i).Length;
                echoString++;
            }
            if (i % 10 == 0)
            {
                try
                {
                    throws++;
                    sum += BurstThrow(i);
                }
                catch (InvalidOperationException)
                {
                    caught++;
                }
            }
        }
        for (int i = 0; i < 5; i++)
        {
            sum += BurstAsync(i).GetAwaiter().GetResult();
            asyncCalls++;
        }
        Results.Print(("burst", n), ("burst_call", calls), ("burst_throw", throws), ("burst_caught", caught),
            ("burst_echo_int", echoInt), ("burst_echo_string", echoString), ("burst_async", asyncCalls),
            ("burst_sum", sum));
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int BurstCall(int i) => (i * 7) ^ (i >> 3);

    /// <summary>`spin n`: n calls of SpinCall, timed, for the cost of a probed call.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Spin(int n)
    {
        long sum = 0;
        long cpu = ThreadCpu.Nanoseconds();
        var watch = System.Diagnostics.Stopwatch.StartNew();
        for (int i = 0; i < n; i++)
        {
            sum += SpinCall(i);
        }
        watch.Stop();
        cpu = ThreadCpu.Nanoseconds() - cpu;
        Results.Print(("spin", n), ("spin_ns", (long)(watch.Elapsed.TotalMilliseconds * 1e6)), ("spin_cpu_ns", cpu), ("spin_sum", sum));
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int SpinCall(int i) => i & 0xFF;

    /// <summary>`spin-other n`: as `spin`, through SpinCall's twin.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void SpinOther(int n)
    {
        long sum = 0;
        long cpu = ThreadCpu.Nanoseconds();
        var watch = System.Diagnostics.Stopwatch.StartNew();
        for (int i = 0; i < n; i++)
        {
            sum += SpinTwin(i);
        }
        watch.Stop();
        cpu = ThreadCpu.Nanoseconds() - cpu;
        Results.Print(("spin", n), ("spin_ns", (long)(watch.Elapsed.TotalMilliseconds * 1e6)), ("spin_cpu_ns", cpu), ("spin_sum", sum));
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int SpinTwin(int i) => i & 0xFF;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static T BurstEcho<T>(T value) => value;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int BurstThrow(int i) => throw new InvalidOperationException("burst #" + i);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static async Task<int> BurstAsync(int i)
    {
        await Task.Yield();
        return i * 3;
    }

    private static void WorkerLoop()
    {
        ulong seed = (ulong)Environment.CurrentManagedThreadId;
        while (true)
        {
            seed = ServeWork(seed);
            Interlocked.Increment(ref s_workItems);
            Thread.Sleep(1);
        }
    }

    /// <summary>One work item: about a millisecond of pure CPU.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static ulong ServeWork(ulong x)
    {
        for (int i = 0; i < 600_000; i++)
        {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        return x | 1;
    }
}

/// <summary>
/// A thread that reads the clock in a loop and keeps the longest gap between two reads: a
/// suspension of the runtime (a GC, a ReJIT) stops it, as the OS scheduler does.
/// </summary>
public static class PauseWatch
{
    private static volatile bool s_running;
    private static long s_maxTicks;
    private static Thread? s_thread;

    public static void Start()
    {
        Stop();
        s_maxTicks = 0;
        s_running = true;
        s_thread = new Thread(Watch) { Name = "pause-watch", IsBackground = true };
        s_thread.Start();
    }

    /// <summary>Stops the thread; the longest gap it saw, in µs.</summary>
    public static long Stop()
    {
        s_running = false;
        s_thread?.Join();
        s_thread = null;
        return (long)(Interlocked.Read(ref s_maxTicks) * 1e6 / System.Diagnostics.Stopwatch.Frequency);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Watch()
    {
        long last = System.Diagnostics.Stopwatch.GetTimestamp();
        long max = 0;
        while (s_running)
        {
            long now = System.Diagnostics.Stopwatch.GetTimestamp();
            if (now - last > max)
            {
                max = now - last;
                Interlocked.Exchange(ref s_maxTicks, max);
            }
            last = now;
        }
    }
}
