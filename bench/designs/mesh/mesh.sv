// A 4x4 systolic mesh of processing elements: operands flow right (a) and down (b).
module mesh (
  input  logic        clk,
  input  logic        rst_n,
  input  logic [15:0] a_west [4],
  input  logic [15:0] b_north [4],
  input  logic [1:0]  mode,
  output logic [31:0] acc_sum,
  output logic [15:0] crc_xor
);
  logic [15:0] a [4][5];
  logic [15:0] b [5][4];
  logic [31:0] acc [4][4];
  logic [15:0] crc [4][4];
  for (genvar r = 0; r < 4; r++) begin : row
    assign a[r][0] = a_west[r];
    for (genvar c = 0; c < 4; c++) begin : col
      if (r == 0) begin : top assign b[0][c] = b_north[c]; end
      pe #(.ID(r * 4 + c)) u_pe (
        .clk, .rst_n, .a_in(a[r][c]), .b_in(b[r][c]), .mode,
        .a_out(a[r][c+1]), .b_out(b[r+1][c]), .acc(acc[r][c]), .crc(crc[r][c])
      );
    end
  end
  always_comb begin
    acc_sum = '0; crc_xor = '0;
    for (int r = 0; r < 4; r++) for (int c = 0; c < 4; c++) begin
      acc_sum = acc_sum + acc[r][c];
      crc_xor = crc_xor ^ crc[r][c];
    end
  end
endmodule
