using System.Runtime.CompilerServices;
using Scenarios.Known;

namespace Scenarios;

/// <summary>
/// `classes`: instantiates Scenarios.Known.Alpha, Beta, Gamma&lt;int&gt; and Outer+Inner and
/// prints their names as a profiler would show them.
/// </summary>
public static class Classes
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        var alpha = new Alpha();
        var beta = new Beta();
        var gamma = new Gamma<int>(42);
        var inner = new Outer.Inner();
        int check = alpha.Describe() + beta.Describe() + gamma.Describe().Length + inner.Describe();
        Results.Print(
            ("classes", 4),
            ("alpha", TypeNames.Display(alpha.GetType())),
            ("beta", TypeNames.Display(beta.GetType())),
            ("gamma", TypeNames.Display(gamma.GetType())),
            ("inner", TypeNames.Display(inner.GetType())),
            ("inner_full_name", inner.GetType().FullName!),
            ("check", check));
        GC.KeepAlive(alpha);
        GC.KeepAlive(beta);
        GC.KeepAlive(gamma);
        GC.KeepAlive(inner);
        return 0;
    }
}
