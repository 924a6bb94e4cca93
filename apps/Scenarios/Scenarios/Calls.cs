using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `calls`: exact, self-counted call counts for mutual recursion, a generic method, virtual
/// and interface dispatch, a lambda and an async method (see apps/README.md for the keys).
/// </summary>
public static class Calls
{
    private static int s_isEven;
    private static int s_isOdd;
    private static int s_lambda;
    private static int s_stepCalls;
    private static int s_stepResumes;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        bool even = IsEven(100);

        for (int i = 0; i < 3; i++)
        {
            Echo(i);
        }
        for (int i = 0; i < 5; i++)
        {
            Echo($"s{i}");
        }
        for (int i = 0; i < 7; i++)
        {
            Echo(new Point(i, -i));
        }

        Shape[] shapes =
        [
            .. Enumerable.Range(1, 6).Select(r => (Shape)new Circle(r)),
            .. Enumerable.Range(1, 9).Select(s => (Shape)new Square(s)),
        ];
        double area = 0;
        foreach (var shape in shapes)
        {
            area += shape.Area();
        }

        IGreeter[] greeters = [new EnglishGreeter(), new EnglishGreeter(), new FrenchGreeter(), new FrenchGreeter(), new FrenchGreeter()];
        int greetLength = 0;
        foreach (var greeter in greeters)
        {
            greetLength += greeter.Greet("ada").Length;
        }

        Func<int, int> twice = [MethodImpl(MethodImplOptions.NoInlining)] (int x) =>
        {
            s_lambda++;
            return x * 2;
        };
        int lambdaSum = 0;
        for (int i = 0; i < 11; i++)
        {
            lambdaSum += twice(i);
        }

        int asyncSum = DriveAsync().GetAwaiter().GetResult();

        Results.Print(("is_even", s_isEven), ("is_odd", s_isOdd), ("is_even_100", even));
        Results.Print(
            ("echo_int", EchoCount<int>.Calls),
            ("echo_string", EchoCount<string>.Calls),
            ("echo_struct", EchoCount<Point>.Calls));
        Results.Print(("area_circle", Circle.Calls), ("area_square", Square.Calls), ("area_total", Math.Round(area, 6)));
        Results.Print(("greet_english", EnglishGreeter.Calls), ("greet_french", FrenchGreeter.Calls), ("greet_length", greetLength));
        Results.Print(
            ("lambda", s_lambda),
            ("lambda_sum", lambdaSum),
            ("lambda_method", $"{twice.Method.DeclaringType!.FullName}.{twice.Method.Name}"));
        Results.Print(("step_async_calls", s_stepCalls), ("step_async_resumes", s_stepResumes), ("step_async_sum", asyncSum));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static bool IsEven(int n)
    {
        s_isEven++;
        return n == 0 || IsOdd(n - 1);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static bool IsOdd(int n)
    {
        s_isOdd++;
        return n != 0 && IsEven(n - 1);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static T Echo<T>(T value)
    {
        EchoCount<T>.Calls++;
        return value;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<int> DriveAsync()
    {
        int sum = 0;
        for (int i = 0; i < 4; i++)
        {
            sum += await StepAsync(i);
        }
        return sum;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static async Task<int> StepAsync(int i)
    {
        Interlocked.Increment(ref s_stepCalls);
        await Task.Yield();
        Interlocked.Increment(ref s_stepResumes);
        return i * 10;
    }

    private static class EchoCount<T>
    {
        public static int Calls;
    }
}
