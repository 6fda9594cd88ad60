// Stimulus: reset, a random serial stream with valid gaps, then the pattern repeated.
`timescale 1ns/1ps
module tb_seq_detector;
  reg clk = 0, reset = 1, bit_in = 0, valid = 0;
  wire detected;
  wire [3:0] hits;
  seq_detector uut (.clk(clk), .reset(reset), .bit_in(bit_in), .valid(valid),
                    .detected(detected), .hits(hits));
  always #5 clk = ~clk;
  task automatic send(input bit b);
    @(negedge clk); bit_in = b; valid = 1;
  endtask
  initial begin
    repeat (2) @(negedge clk);
    reset = 0;
    repeat (40) begin
      @(negedge clk); bit_in = $urandom_range(0, 1); valid = $urandom_range(0, 3) != 0;
    end
    repeat (20) begin send(1); send(0); send(1); send(1); end
    send(0); send(0); send(1); send(0); send(0);
    @(negedge clk); reset = 1; @(negedge clk); reset = 0;
    repeat (3) @(negedge clk);
    $finish;
  end
endmodule
