Imports System.Diagnostics
Imports System.Runtime.CompilerServices
Imports System.Threading.Tasks

' `VbAsync [seconds=2]`: spins for the seconds given in the Async Function BusyAsync,
' after an Await, so that its state machine's MoveNext holds the busy loop.
Module Program
    Private s_sink As ULong

    <MethodImpl(MethodImplOptions.NoInlining)>
    Function Main(args As String()) As Integer
        Dim seconds As Integer = If(args.Length > 0, Integer.Parse(args(0)), 2)
        Dim deadline As Long = Stopwatch.GetTimestamp() + seconds * Stopwatch.Frequency
        s_sink = BusyAsync(&H9E3779B97F4A7C15UL, deadline).GetAwaiter().GetResult()
        Console.WriteLine("RESULT vb_seconds=" & seconds.ToString() & " vb_sink=" & (s_sink And 1UL).ToString())
        Return 0
    End Function

    <MethodImpl(MethodImplOptions.NoInlining)>
    Async Function BusyAsync(x As ULong, deadline As Long) As Task(Of ULong)
        Await Task.Yield()
        While Stopwatch.GetTimestamp() < deadline
            For i As Integer = 0 To 1999999
                x = x Xor (x << 11) : x = x Xor (x >> 9) : x = x Xor (x << 15)
            Next
        End While
        Return x
    End Function
End Module
